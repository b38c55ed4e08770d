//! Host-side data for kernels (no driver needed): the element types, their
//! bytes as the GPU stores them (little-endian), seeded random inputs and the
//! poison values written before a run to catch unwritten outputs. The GPU
//! runtime and the CPU executor's runs both fill and read buffers with it.
//!
//! Random generator: PCG-XSH-RR 32 (O'Neill's `pcg32`), written here instead of
//! taken from `rand`/`rand_pcg`: it is ten lines, its stream is fixed by the
//! published algorithm (a test pins the reference outputs), so inputs stay the
//! same across dependency upgrades and the CPU reference, the GPU run and a
//! bug report all see identical data for a seed.
//!
//! Random floats are drawn from the grid `k·2^-(p-1) − 1`, `k ∈ [0, 2^p)`,
//! where `p` is the type's significand width (24, 11, 8 bits for fp32, fp16,
//! bf16): every value lies in [-1, 1) and is exact in its type, so no rounding
//! separates what the reference computes with from what the GPU reads.
//! Integers are uniform in [-128, 128) (i32) and [0, 256) (u32): small enough
//! that sums of products over 2^16 terms stay exact.

use std::fmt::Debug;

use half::{bf16, f16};

/// Bytes that are not a whole number of elements of their type.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("{0}")]
pub struct DataError(pub String);

/// PCG-XSH-RR with 64-bit state and 32-bit output; `new(seed, stream)` seeds
/// it exactly as the reference `pcg32_srandom_r(seed, stream)`.
#[derive(Clone, Debug)]
pub struct Pcg32 {
    state: u64,
    increment: u64,
}

impl Pcg32 {
    const MULTIPLIER: u64 = 6364136223846793005;

    /// A generator for `seed` on the independent sequence `stream`.
    pub fn new(seed: u64, stream: u64) -> Pcg32 {
        let mut rng = Pcg32 {
            state: 0,
            increment: (stream << 1) | 1,
        };
        rng.next_u32();
        rng.state = rng.state.wrapping_add(seed);
        rng.next_u32();
        rng
    }

    /// The next 32 random bits.
    pub fn next_u32(&mut self) -> u32 {
        let old = self.state;
        self.state = old
            .wrapping_mul(Self::MULTIPLIER)
            .wrapping_add(self.increment);
        let xorshifted = (((old >> 18) ^ old) >> 27) as u32;
        xorshifted.rotate_right((old >> 59) as u32)
    }

    /// The top `bits` (1..=32) of the next output, uniform in [0, 2^bits).
    fn next_bits(&mut self, bits: u32) -> u32 {
        self.next_u32() >> (32 - bits)
    }
}

/// A uniform value in [-1, 1) on the grid of a `significand_bits`-bit type.
fn unit_grid(rng: &mut Pcg32, significand_bits: u32) -> f64 {
    let k = rng.next_bits(significand_bits);
    f64::from(k) * (-f64::from(significand_bits - 1)).exp2() - 1.0
}

/// Scalar types a kernel's tensors hold, named as in the language.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ElementType {
    /// IEEE binary16.
    F16,
    /// bfloat16 (the top half of a binary32).
    BF16,
    /// IEEE binary32.
    F32,
    /// Two's-complement 32-bit integer.
    I32,
    /// Unsigned 32-bit integer.
    U32,
}

impl ElementType {
    /// Every type, in declaration order.
    pub const ALL: [ElementType; 5] = [
        ElementType::F16,
        ElementType::BF16,
        ElementType::F32,
        ElementType::I32,
        ElementType::U32,
    ];

    /// The language's name: `fp16`, `bf16`, `fp32`, `i32`, `u32`.
    pub fn name(self) -> &'static str {
        match self {
            ElementType::F16 => "fp16",
            ElementType::BF16 => "bf16",
            ElementType::F32 => "fp32",
            ElementType::I32 => "i32",
            ElementType::U32 => "u32",
        }
    }

    /// The type named `name` (case-insensitive, as the language reads it).
    pub fn from_name(name: &str) -> Option<ElementType> {
        ElementType::ALL
            .into_iter()
            .find(|ty| ty.name().eq_ignore_ascii_case(name))
    }

    /// Bytes per element.
    pub fn bytes(self) -> usize {
        match self {
            ElementType::F16 | ElementType::BF16 => 2,
            ElementType::F32 | ElementType::I32 | ElementType::U32 => 4,
        }
    }

    /// The poison's bit pattern, `bytes()` wide (for device-side fills).
    pub fn poison_bits(self) -> u32 {
        match self {
            ElementType::F16 => u32::from(F16_POISON),
            ElementType::BF16 => u32::from(BF16_POISON),
            ElementType::F32 => F32_POISON,
            ElementType::I32 | ElementType::U32 => INT_POISON,
        }
    }

    /// `len` seeded random elements as bytes; equal to
    /// `to_bytes(&random_vec::<T>(len, seed))` for this type's `T`.
    pub fn random_bytes(self, len: usize, seed: u64) -> Vec<u8> {
        match self {
            ElementType::F16 => to_bytes(&random_vec::<f16>(len, seed)),
            ElementType::BF16 => to_bytes(&random_vec::<bf16>(len, seed)),
            ElementType::F32 => to_bytes(&random_vec::<f32>(len, seed)),
            ElementType::I32 => to_bytes(&random_vec::<i32>(len, seed)),
            ElementType::U32 => to_bytes(&random_vec::<u32>(len, seed)),
        }
    }

    /// `len` poison elements as bytes.
    pub fn poison_bytes(self, len: usize) -> Vec<u8> {
        let bits = self.poison_bits().to_le_bytes();
        bits[..self.bytes()].repeat(len)
    }

    /// The elements of `bytes` widened to f64 (exactly: every value of these
    /// types is an f64), for comparing against a reference.
    pub fn to_f64(self, bytes: &[u8]) -> Result<Vec<f64>, DataError> {
        match self {
            ElementType::F16 => widen::<f16>(bytes),
            ElementType::BF16 => widen::<bf16>(bytes),
            ElementType::F32 => widen::<f32>(bytes),
            ElementType::I32 => widen::<i32>(bytes),
            ElementType::U32 => widen::<u32>(bytes),
        }
    }

    /// How many elements of `bytes` still hold the poison pattern, i.e. were
    /// never written by the kernel.
    pub fn count_poison(self, bytes: &[u8]) -> Result<usize, DataError> {
        check_whole(bytes.len(), self)?;
        let poison = self.poison_bytes(1);
        Ok(bytes
            .chunks_exact(self.bytes())
            .filter(|element| *element == poison.as_slice())
            .count())
    }
}

fn widen<T: Element>(bytes: &[u8]) -> Result<Vec<f64>, DataError> {
    Ok(from_bytes::<T>(bytes)?
        .into_iter()
        .map(Element::to_f64)
        .collect())
}

const F16_POISON: u16 = 0x7EAD;
const BF16_POISON: u16 = 0x7FED;
const F32_POISON: u32 = 0x7FC0_DEAD;
const INT_POISON: u32 = 0xDEAD_BEEF;

/// A scalar the host can hand to a kernel. Rules: `write_le`/`read_le` are
/// the GPU's little-endian layout of `TYPE.bytes()` bytes; `poison()` is a
/// quiet NaN with a recognisable payload for floats and `0xDEADBEEF` for
/// integers, compared bitwise by `is_poison`; `random` follows the module's
/// value rules.
pub trait Element: Copy + Debug + PartialEq + 'static {
    /// The matching runtime type tag.
    const TYPE: ElementType;
    /// Appends the value's bytes.
    fn write_le(self, out: &mut Vec<u8>);
    /// Reads a value from exactly `TYPE.bytes()` bytes.
    fn read_le(bytes: &[u8]) -> Self;
    /// The value as f64 (exact for every type here).
    fn to_f64(self) -> f64;
    /// The nearest value (ties to even; integers saturate), for writing a
    /// reference result in the kernel's type.
    fn from_f64(value: f64) -> Self;
    /// A random value (see the module's rules).
    fn random(rng: &mut Pcg32) -> Self;
    /// The poison value.
    fn poison() -> Self;
    /// Whether the bits are the poison's bits.
    fn is_poison(self) -> bool;
}

impl Element for f16 {
    const TYPE: ElementType = ElementType::F16;
    fn write_le(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_bits().to_le_bytes());
    }
    fn read_le(bytes: &[u8]) -> f16 {
        f16::from_bits(u16::from_le_bytes([bytes[0], bytes[1]]))
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn from_f64(value: f64) -> f16 {
        f16::from_f64(value)
    }
    fn random(rng: &mut Pcg32) -> f16 {
        f16::from_f64(unit_grid(rng, f16::MANTISSA_DIGITS))
    }
    fn poison() -> f16 {
        f16::from_bits(F16_POISON)
    }
    fn is_poison(self) -> bool {
        self.to_bits() == F16_POISON
    }
}

impl Element for bf16 {
    const TYPE: ElementType = ElementType::BF16;
    fn write_le(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_bits().to_le_bytes());
    }
    fn read_le(bytes: &[u8]) -> bf16 {
        bf16::from_bits(u16::from_le_bytes([bytes[0], bytes[1]]))
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn from_f64(value: f64) -> bf16 {
        bf16::from_f64(value)
    }
    fn random(rng: &mut Pcg32) -> bf16 {
        bf16::from_f64(unit_grid(rng, bf16::MANTISSA_DIGITS))
    }
    fn poison() -> bf16 {
        bf16::from_bits(BF16_POISON)
    }
    fn is_poison(self) -> bool {
        self.to_bits() == BF16_POISON
    }
}

impl Element for f32 {
    const TYPE: ElementType = ElementType::F32;
    fn write_le(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_bits().to_le_bytes());
    }
    fn read_le(bytes: &[u8]) -> f32 {
        f32::from_bits(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn from_f64(value: f64) -> f32 {
        value as f32
    }
    fn random(rng: &mut Pcg32) -> f32 {
        unit_grid(rng, f32::MANTISSA_DIGITS) as f32
    }
    fn poison() -> f32 {
        f32::from_bits(F32_POISON)
    }
    fn is_poison(self) -> bool {
        self.to_bits() == F32_POISON
    }
}

impl Element for i32 {
    const TYPE: ElementType = ElementType::I32;
    fn write_le(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn read_le(bytes: &[u8]) -> i32 {
        i32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn from_f64(value: f64) -> i32 {
        // `as` saturates and sends NaN to 0, which is what a reference wants.
        value.round_ties_even() as i32
    }
    fn random(rng: &mut Pcg32) -> i32 {
        rng.next_bits(8) as i32 - 128
    }
    fn poison() -> i32 {
        INT_POISON as i32
    }
    fn is_poison(self) -> bool {
        self as u32 == INT_POISON
    }
}

impl Element for u32 {
    const TYPE: ElementType = ElementType::U32;
    fn write_le(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn read_le(bytes: &[u8]) -> u32 {
        u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn from_f64(value: f64) -> u32 {
        value.round_ties_even() as u32
    }
    fn random(rng: &mut Pcg32) -> u32 {
        rng.next_bits(8)
    }
    fn poison() -> u32 {
        INT_POISON
    }
    fn is_poison(self) -> bool {
        self == INT_POISON
    }
}

/// `len` random values from `Pcg32::new(seed, 0)`, one draw per element.
pub fn random_vec<T: Element>(len: usize, seed: u64) -> Vec<T> {
    let mut rng = Pcg32::new(seed, 0);
    (0..len).map(|_| T::random(&mut rng)).collect()
}

/// The values' bytes as the GPU stores them.
pub fn to_bytes<T: Element>(values: &[T]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() * T::TYPE.bytes());
    for value in values {
        value.write_le(&mut out);
    }
    out
}

/// Values read back from GPU bytes; the length must be a whole number of elements.
pub fn from_bytes<T: Element>(bytes: &[u8]) -> Result<Vec<T>, DataError> {
    check_whole(bytes.len(), T::TYPE)?;
    Ok(bytes
        .chunks_exact(T::TYPE.bytes())
        .map(T::read_le)
        .collect())
}

fn check_whole(len: usize, ty: ElementType) -> Result<(), DataError> {
    if len % ty.bytes() == 0 {
        Ok(())
    } else {
        Err(DataError(format!(
            "{len} bytes are not a whole number of {} elements ({} B each)",
            ty.name(),
            ty.bytes()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pcg32_matches_the_reference_stream() {
        // pcg32_srandom_r(&rng, 42, 54) in the PCG reference demo.
        let mut rng = Pcg32::new(42, 54);
        let outputs: Vec<u32> = (0..6).map(|_| rng.next_u32()).collect();
        assert_eq!(
            outputs,
            [
                0xa15c02b7, 0x7b47f409, 0xba1d3330, 0x83d2f293, 0xbfa4784b, 0xcbed606e
            ]
        );
    }

    fn assert_in_unit_range(values: &[f64], ty: ElementType) {
        assert!(
            values.iter().all(|v| (-1.0..1.0).contains(v)),
            "{} out of [-1,1)",
            ty.name()
        );
        assert!(
            values.iter().any(|&v| v < -0.5) && values.iter().any(|&v| v > 0.5),
            "{} not spread",
            ty.name()
        );
    }

    #[test]
    fn random_floats_are_exact_and_in_the_half_open_unit_range() {
        for ty in [ElementType::F16, ElementType::BF16, ElementType::F32] {
            let values = ty.to_f64(&ty.random_bytes(4096, 7)).unwrap();
            assert_in_unit_range(&values, ty);
        }
        // The grid's top point, 1 - 2^-(p-1), must be exact: not rounded up to 1.
        let top = |bits: u32| f64::from((1u32 << bits) - 1) * (-f64::from(bits - 1)).exp2() - 1.0;
        assert_eq!(f16::from_f64(top(11)).to_f64(), top(11));
        assert_eq!(bf16::from_f64(top(8)).to_f64(), top(8));
        assert_eq!(f64::from(top(24) as f32), top(24));
        assert!(top(8) < 1.0 && top(11) < 1.0 && top(24) < 1.0);
    }

    #[test]
    fn random_integers_stay_small() {
        let ints = random_vec::<i32>(4096, 3);
        assert!(ints.iter().all(|v| (-128..128).contains(v)));
        assert!(ints.contains(&-128) && ints.contains(&127));
        assert!(random_vec::<u32>(4096, 3).iter().all(|&v| v < 256));
    }

    #[test]
    fn seeds_reproduce_and_differ() {
        assert_eq!(random_vec::<f32>(64, 11), random_vec::<f32>(64, 11));
        assert_ne!(random_vec::<f32>(64, 11), random_vec::<f32>(64, 12));
        assert_eq!(
            ElementType::BF16.random_bytes(64, 5),
            to_bytes(&random_vec::<bf16>(64, 5))
        );
    }

    #[test]
    fn poison_is_nan_for_floats_and_recognised_bitwise() {
        assert!(f16::poison().is_nan() && bf16::poison().is_nan() && f32::poison().is_nan());
        assert!(f32::poison().is_poison() && !f32::NAN.is_poison());
        assert!(i32::poison().is_poison() && u32::poison() == 0xDEADBEEF);
        for ty in ElementType::ALL {
            let mut bytes = ty.poison_bytes(5);
            assert_eq!(ty.count_poison(&bytes).unwrap(), 5, "{}", ty.name());
            bytes[0] ^= 1;
            assert_eq!(ty.count_poison(&bytes).unwrap(), 4, "{}", ty.name());
        }
    }

    #[test]
    fn bytes_round_trip_and_reject_partial_elements() {
        let values = [f16::from_f32(0.5), f16::from_f32(-2.0)];
        assert_eq!(to_bytes(&values), [0x00, 0x38, 0x00, 0xC0]);
        assert_eq!(from_bytes::<f16>(&to_bytes(&values)).unwrap(), values);
        let error = from_bytes::<f32>(&[0; 6]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "6 bytes are not a whole number of fp32 elements (4 B each)"
        );
    }

    #[test]
    fn reference_values_round_to_the_kernel_type() {
        assert_eq!(i32::from_f64(2.5), 2);
        assert_eq!(i32::from_f64(1e12), i32::MAX);
        assert_eq!(bf16::from_f64(1.0 + 1.0 / 512.0).to_f64(), 1.0);
        assert_eq!(u32::from_f64(-3.0), 0);
    }

    #[test]
    fn names_follow_the_language() {
        assert_eq!(ElementType::from_name("FP16"), Some(ElementType::F16));
        assert_eq!(ElementType::from_name("fp64"), None);
        assert!(
            ElementType::ALL
                .iter()
                .all(|&ty| ElementType::from_name(ty.name()) == Some(ty))
        );
    }
}
