//! The GPUs the tile model knows: their figures in `devices.json` (SMs,
//! clocks, DRAM, L2 and shared-memory bandwidth, tensor-core rate per
//! instruction family, the per-SM limits), chosen by name, read from a file
//! of the same form, or matched to the GPU the driver reports.

use std::collections::BTreeMap;

use serde_json::Value;

/// The descriptions shipped with the compiler.
pub const BUILT_IN: &str = include_str!("devices.json");

/// One GPU as the model sees it.
///
/// Rule: every figure is positive; `tensor_flops_per_clock` names the
/// instruction families by the PTX they lower to (`wgmma.f16`,
/// `mma.sync.f16`), flops per clock per SM, dense.
#[derive(Clone, PartialEq, Debug)]
pub struct Device {
    /// The name reports print.
    pub name: String,
    /// Substrings of a driver-reported name that mean this device.
    pub matches: Vec<String>,
    /// (major, minor).
    pub compute_capability: (u32, u32),
    /// Streaming multiprocessors.
    pub sms: u32,
    /// The SM clock under a tensor-core load.
    pub clock_mhz: f64,
    /// DRAM bandwidth, GB/s.
    pub dram_gbps: f64,
    /// What all SMs together pull from L2, GB/s.
    pub l2_gbps: f64,
    /// What one SM can take from L2 per clock.
    pub l2_port_bytes_per_clock: f64,
    /// Shared memory one SM reads per clock.
    pub shared_bytes_per_clock: f64,
    /// Shared memory per SM (bytes).
    pub shared_per_sm: u32,
    /// Shared memory one block may use (bytes, after opting in).
    pub shared_per_block: u32,
    /// 32-bit registers per SM.
    pub registers_per_sm: u32,
    /// Resident threads per SM.
    pub threads_per_sm: u32,
    /// Resident blocks per SM.
    pub blocks_per_sm: u32,
    /// From a load's issue to its data, DRAM (ns).
    pub dram_latency_ns: f64,
    /// What a launch costs beyond its kernel's work (µs).
    pub launch_us: f64,
    /// Dense flops per clock per SM, by instruction family.
    pub tensor_flops_per_clock: BTreeMap<String, f64>,
    /// Where the figures came from: `built-in`, a file, or the driver.
    pub source: String,
}

/// A description that cannot be read. One line.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("{0}")]
pub struct DeviceError(pub String);

impl Device {
    /// The built-in descriptions.
    pub fn built_in() -> Vec<Device> {
        parse(BUILT_IN, "built-in").expect("the built-in descriptions parse")
    }

    /// `--device NAME|FILE`: a built-in description whose name or match
    /// contains `name` (case-insensitive), or the file of that path.
    pub fn find(name: &str) -> Result<Device, DeviceError> {
        let wanted = name.to_ascii_lowercase();
        let devices = Device::built_in();
        if let Some(device) = devices.iter().find(|d| d.answers_to(&wanted)) {
            return Ok(device.clone());
        }
        let path = std::path::Path::new(name);
        if path.is_file() {
            let text = std::fs::read_to_string(path)
                .map_err(|e| DeviceError(format!("{name}: cannot read it: {e}")))?;
            let mut found = parse(&text, name)?;
            return match found.len() {
                1 => Ok(found.remove(0)),
                n => Err(DeviceError(format!(
                    "{name}: {n} devices described; a device file describes one"
                ))),
            };
        }
        let known: Vec<&str> = devices.iter().map(|d| d.name.as_str()).collect();
        Err(DeviceError(format!(
            "no device `{name}`: the built-in ones are {}; or give a JSON file (docs/tuning.md)",
            known.join(", ")
        )))
    }

    /// Whether a lower-case name means this device.
    fn answers_to(&self, lower: &str) -> bool {
        self.name.to_ascii_lowercase() == lower
            || self
                .matches
                .iter()
                .any(|m| lower.contains(&m.to_ascii_lowercase()))
    }

    /// The built-in description that `driver_name` (e.g. `NVIDIA H100 80GB
    /// HBM3`) names, if any.
    pub fn for_driver_name(driver_name: &str) -> Option<Device> {
        let lower = driver_name.to_ascii_lowercase();
        Device::built_in()
            .into_iter()
            .find(|d| d.answers_to(&lower))
    }

    /// Seconds per clock.
    pub fn clock_seconds(&self) -> f64 {
        1e-6 / self.clock_mhz
    }

    /// Tensor-core flops per second of the whole chip for `family`.
    pub fn tensor_flops(&self, family: &str) -> Option<f64> {
        self.tensor_flops_per_clock
            .get(family)
            .map(|per_clock| per_clock * f64::from(self.sms) * self.clock_mhz * 1e6)
    }
}

/// The GPU the driver reports, described: the built-in description its
/// name matches (or, failing that, the first of its compute capability's
/// major version), with the SM count, shared memory, registers and DRAM
/// bandwidth the driver states put in. The clock stays the description's:
/// the driver states the peak, not what a GEMM holds.
#[cfg(feature = "cuda")]
pub fn from_driver(info: &crate::runtime::DeviceInfo) -> Option<Device> {
    let mut device = Device::for_driver_name(&info.name).or_else(|| {
        Device::built_in()
            .into_iter()
            .find(|d| d.compute_capability.0 == info.compute_capability.0)
    })?;
    let base = device.name.clone();
    device.name = info.name.clone();
    device.compute_capability = info.compute_capability;
    device.sms = info.sm_count;
    if info.shared_per_sm > 0 {
        device.shared_per_sm = info.shared_per_sm;
    }
    if info.max_shared_per_block_optin > 0 {
        device.shared_per_block = info.max_shared_per_block_optin;
    }
    if info.registers_per_sm > 0 {
        device.registers_per_sm = info.registers_per_sm;
    }
    if info.memory_clock_khz > 0 && info.memory_bus_bits > 0 {
        // Double data rate: two transfers per clock of the bus width.
        device.dram_gbps =
            2.0 * f64::from(info.memory_clock_khz) * 1e3 * f64::from(info.memory_bus_bits)
                / 8.0
                / 1e9;
    }
    device.source = format!(
        "the driver (SMs, shared memory, registers, DRAM bandwidth), {base} (built-in) for the rest"
    );
    Some(device)
}

/// The descriptions in `text`, a JSON object with a `devices` array, or one
/// device object.
pub fn parse(text: &str, source: &str) -> Result<Vec<Device>, DeviceError> {
    let root: Value =
        serde_json::from_str(text).map_err(|e| DeviceError(format!("{source}: {e}")))?;
    let objects: Vec<&Value> = match root.get("devices") {
        Some(Value::Array(items)) => items.iter().collect(),
        Some(_) => return Err(DeviceError(format!("{source}: `devices` is not an array"))),
        None => vec![&root],
    };
    objects
        .into_iter()
        .map(|object| device(object, source))
        .collect()
}

fn device(object: &Value, source: &str) -> Result<Device, DeviceError> {
    let name = object
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| DeviceError(format!("{source}: a device without a `name`")))?
        .to_string();
    let at = |field: &str| format!("{source}: device `{name}`: `{field}`");
    let number = |field: &str| -> Result<f64, DeviceError> {
        match object.get(field).and_then(Value::as_f64) {
            Some(value) if value > 0.0 && value.is_finite() => Ok(value),
            Some(_) => Err(DeviceError(format!("{} must be positive", at(field)))),
            None => Err(DeviceError(format!(
                "{} is missing or not a number",
                at(field)
            ))),
        }
    };
    let whole = |field: &str| -> Result<u32, DeviceError> {
        let value = number(field)?;
        if value.fract() != 0.0 || value > f64::from(u32::MAX) {
            return Err(DeviceError(format!("{} must be a whole number", at(field))));
        }
        Ok(value as u32)
    };
    let matches = match object.get("matches") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| {
                item.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| DeviceError(format!("{} holds a non-string", at("matches"))))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(DeviceError(format!("{} is not an array", at("matches")))),
    };
    let capability = match object.get("compute_capability") {
        Some(Value::Array(pair)) if pair.len() == 2 => pair
            .iter()
            .map(|v| v.as_u64().and_then(|v| u32::try_from(v).ok()))
            .collect::<Option<Vec<u32>>>(),
        _ => None,
    }
    .ok_or_else(|| {
        DeviceError(format!(
            "{} must be [major, minor]",
            at("compute_capability")
        ))
    })?;
    let rates = match object.get("tensor_flops_per_clock") {
        Some(Value::Object(map)) if !map.is_empty() => map
            .iter()
            .map(|(family, rate)| match rate.as_f64() {
                Some(rate) if rate > 0.0 => Ok((family.clone(), rate)),
                _ => Err(DeviceError(format!(
                    "{}: `{family}` must be a positive number",
                    at("tensor_flops_per_clock")
                ))),
            })
            .collect::<Result<_, _>>()?,
        _ => {
            return Err(DeviceError(format!(
                "{} must map instruction families to flops per clock per SM",
                at("tensor_flops_per_clock")
            )));
        }
    };
    Ok(Device {
        matches,
        compute_capability: (capability[0], capability[1]),
        sms: whole("sms")?,
        clock_mhz: number("clock_mhz")?,
        dram_gbps: number("dram_gbps")?,
        l2_gbps: number("l2_gbps")?,
        l2_port_bytes_per_clock: number("l2_port_bytes_per_clock")?,
        shared_bytes_per_clock: number("shared_bytes_per_clock")?,
        shared_per_sm: whole("shared_per_sm")?,
        shared_per_block: whole("shared_per_block")?,
        registers_per_sm: whole("registers_per_sm")?,
        threads_per_sm: whole("threads_per_sm")?,
        blocks_per_sm: whole("blocks_per_sm")?,
        dram_latency_ns: number("dram_latency_ns")?,
        launch_us: number("launch_us")?,
        tensor_flops_per_clock: rates,
        source: source.to_string(),
        name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_descriptions_cover_hopper_ampere_and_a_consumer_card() {
        let devices = Device::built_in();
        for name in ["H100", "H200", "A100", "RTX 4090"] {
            assert!(
                devices.iter().any(|d| d.name.contains(name)),
                "{name} missing"
            );
        }
        let h100 = Device::find("h100").expect("found by match");
        // 132 SMs at 3200 fp16 flops per clock at 1755 MHz: 741 TFLOP/s,
        // what the best GEMMs reach (the datasheet's 989 is at 4096 per
        // clock and 1830 MHz).
        let peak = h100.tensor_flops("wgmma.f16").expect("Hopper has wgmma");
        assert!((peak / 1e12 - 741.3).abs() < 1.0, "{peak}");
        assert!(
            Device::find("A100")
                .unwrap()
                .tensor_flops("wgmma.f16")
                .is_none()
        );
    }

    #[test]
    fn a_driver_name_finds_its_description() {
        let found = Device::for_driver_name("NVIDIA H100 80GB HBM3").expect("an H100");
        assert_eq!(found.name, "H100 SXM");
        assert!(Device::for_driver_name("NVIDIA H200").is_some());
        assert!(Device::for_driver_name("Tesla V100-SXM2-16GB").is_none());
    }

    #[test]
    fn a_bad_description_says_which_field() {
        let broken = BUILT_IN.replacen("\"sms\": 132", "\"sms\": -4", 1);
        let error = parse(&broken, "mine.json").unwrap_err().to_string();
        assert_eq!(
            error,
            "mine.json: device `H100 SXM`: `sms` must be positive"
        );
        let error = Device::find("V100").unwrap_err().to_string();
        assert!(
            error.starts_with("no device `V100`: the built-in ones are H100 SXM"),
            "{error}"
        );
    }
}
