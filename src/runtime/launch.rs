//! Runtime stage (feature `cuda`): what a launch is made of — the grid, block
//! and shared-memory configuration, the argument values — and the checks that
//! run on the host before the driver is asked, against limits every CUDA GPU
//! shares and against the `.entry` parameter list read from the PTX text.

use std::ffi::c_void;
use std::fmt;

use super::driver::TensorMap;
use super::error::Bytes;

/// Shared memory a block may use without opting in; above it the kernel's
/// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES` must be raised first.
pub const DEFAULT_SHARED_LIMIT_BYTES: u32 = 48 * 1024;
/// Most threads in one block, on every architecture since sm_20.
pub const MAX_THREADS_PER_BLOCK: u64 = 1024;
const MAX_GRID: [u32; 3] = [i32::MAX as u32, 65535, 65535];

/// Grid and block extents (x, y, z) and dynamic shared memory of one launch.
/// Invariant after `validate`: every extent ≥ 1, the block has at most 1024
/// threads, and the grid is within CUDA's limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks per grid, x fastest.
    pub grid: [u32; 3],
    /// Threads per block, x fastest.
    pub block: [u32; 3],
    /// Bytes of dynamic (`extern .shared`) memory per block.
    pub dynamic_shared_bytes: u32,
    /// Launched cooperatively (`cuLaunchCooperativeKernel`): every block is
    /// resident at once, as a kernel with a grid barrier needs; a grid
    /// larger than the device holds is refused before launching.
    pub cooperative: bool,
}

impl LaunchConfig {
    /// A configuration with no dynamic shared memory.
    pub fn new(grid: [u32; 3], block: [u32; 3]) -> LaunchConfig {
        LaunchConfig {
            grid,
            block,
            dynamic_shared_bytes: 0,
            cooperative: false,
        }
    }

    /// A one-dimensional grid of one-dimensional blocks.
    pub fn linear(blocks: u32, threads_per_block: u32) -> LaunchConfig {
        LaunchConfig::new([blocks, 1, 1], [threads_per_block, 1, 1])
    }

    /// The same configuration with `bytes` of dynamic shared memory.
    pub fn with_dynamic_shared(self, bytes: u32) -> LaunchConfig {
        LaunchConfig {
            dynamic_shared_bytes: bytes,
            ..self
        }
    }

    /// The same configuration, launched cooperatively when `cooperative`.
    pub fn with_cooperative(self, cooperative: bool) -> LaunchConfig {
        LaunchConfig {
            cooperative,
            ..self
        }
    }

    /// Blocks in the grid.
    pub fn blocks(&self) -> u64 {
        self.grid.iter().map(|&d| u64::from(d)).product()
    }

    /// Threads in one block.
    pub fn threads_per_block(&self) -> u64 {
        self.block.iter().map(|&d| u64::from(d)).product()
    }

    /// Why the driver would refuse this configuration, if it would for a
    /// reason every GPU shares (zero or oversized extents).
    pub fn validate(&self) -> Result<(), String> {
        for (what, dims) in [("grid", self.grid), ("block", self.block)] {
            if let Some(axis) = dims.iter().position(|&d| d == 0) {
                return Err(format!("{what} extent {} is zero", AXES[axis]));
            }
        }
        for (axis, (&extent, &limit)) in self.grid.iter().zip(&MAX_GRID).enumerate() {
            if extent > limit {
                return Err(format!(
                    "grid extent {} is {extent}; CUDA allows {limit}",
                    AXES[axis]
                ));
            }
        }
        let threads = self.threads_per_block();
        if threads > MAX_THREADS_PER_BLOCK {
            return Err(format!(
                "a block of {threads} threads; CUDA allows {MAX_THREADS_PER_BLOCK}"
            ));
        }
        Ok(())
    }
}

const AXES: [&str; 3] = ["x", "y", "z"];

impl fmt::Display for LaunchConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [gx, gy, gz] = self.grid;
        let [bx, by, bz] = self.block;
        let shared = Bytes(u64::from(self.dynamic_shared_bytes));
        let cooperative = if self.cooperative {
            ", cooperative"
        } else {
            ""
        };
        write!(
            f,
            "<<<grid ({gx},{gy},{gz}), block ({bx},{by},{bz}), dynamic shared {shared}{cooperative}>>>"
        )
    }
}

/// One kernel argument, passed by value as the driver expects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelArg {
    /// A device address (a `.param .u64` pointing into global memory).
    Pointer(u64),
    /// A 32-bit integer (`.param .u32` / `.s32`), e.g. a symbolic dimension.
    U32(u32),
    /// A TMA tensor map (`.param .align 64 .b8 [128]`), passed by value; held
    /// inline, so the host copy the driver reads is 64-byte aligned
    /// ([`Gpu::encode_tensor_map`](super::Gpu::encode_tensor_map) makes one).
    TensorMap(TensorMap),
}

impl KernelArg {
    /// Size of the value in the parameter buffer.
    pub fn bytes(&self) -> u32 {
        match self {
            KernelArg::Pointer(_) => 8,
            KernelArg::U32(_) => 4,
            KernelArg::TensorMap(_) => std::mem::size_of::<TensorMap>() as u32,
        }
    }

    fn describe(&self) -> String {
        match self {
            KernelArg::Pointer(address) => format!("a pointer (0x{address:x}, 8 B)"),
            KernelArg::U32(value) => format!("a u32 ({value}, 4 B)"),
            KernelArg::TensorMap(_) => "a tensor map (128 B)".to_owned(),
        }
    }

    /// Where the value lies: the driver reads `bytes()` from here.
    fn value(&self) -> *const c_void {
        match self {
            KernelArg::Pointer(address) => (address as *const u64).cast(),
            KernelArg::U32(value) => (value as *const u32).cast(),
            KernelArg::TensorMap(map) => (map as *const TensorMap).cast(),
        }
    }
}

/// The `kernelParams` array of a launch: one pointer per argument, to the
/// argument's own value inside `args` (which must outlive the launch call;
/// the driver copies every value before `cuLaunchKernel` or
/// `cuLaunchCooperativeKernel` returns, and never writes through them).
pub(crate) fn parameter_pointers(args: &[KernelArg]) -> Vec<*mut c_void> {
    args.iter().map(|arg| arg.value().cast_mut()).collect()
}

/// One `.param` of a kernel entry as written in the PTX.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryParam {
    /// The parameter's name.
    pub name: String,
    /// Its type, e.g. `.u64` (for arrays the element type).
    pub ty: String,
    /// Bytes it occupies (element size × array length).
    pub bytes: u32,
}

/// A kernel entry point of a PTX module: its name and, when every `.param`
/// could be read, its parameter list (`None` means "unknown: do not check").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntrySignature {
    /// The `.entry` name.
    pub name: String,
    /// The parameters in order.
    pub params: Option<Vec<EntryParam>>,
}

impl EntrySignature {
    /// Checks `args` against the parameter list: same count, same sizes.
    pub fn check_arguments(&self, args: &[KernelArg]) -> Result<(), String> {
        let Some(params) = &self.params else {
            return Ok(());
        };
        if params.len() != args.len() {
            let listed: Vec<String> = params
                .iter()
                .map(|p| format!("{} {}", p.ty, p.name))
                .collect();
            return Err(format!(
                "takes {} parameters ({}) but was given {} arguments",
                params.len(),
                listed.join(", "),
                args.len()
            ));
        }
        for (index, (param, arg)) in params.iter().zip(args).enumerate() {
            if param.bytes != arg.bytes() {
                return Err(format!(
                    "argument {index} is {} but parameter `{}` is {} ({} B)",
                    arg.describe(),
                    param.name,
                    param.ty,
                    param.bytes
                ));
            }
        }
        Ok(())
    }
}

/// The `.entry` signatures declared in `ptx`, in order of appearance.
pub fn entry_signatures(ptx: &str) -> Vec<EntrySignature> {
    let text = strip_comments(ptx);
    let mut entries = Vec::new();
    let mut rest = text.as_str();
    while let Some(at) = find_directive(rest, ".entry") {
        rest = &rest[at + ".entry".len()..];
        let trimmed = rest.trim_start();
        let name_len = trimmed
            .find(|c: char| !is_identifier_char(c))
            .unwrap_or(trimmed.len());
        if name_len == 0 {
            continue;
        }
        let name = trimmed[..name_len].to_owned();
        let after_name = trimmed[name_len..].trim_start();
        let params = match after_name.strip_prefix('(') {
            Some(list) => list
                .find(')')
                .and_then(|close| parse_params(&list[..close])),
            None => Some(Vec::new()),
        };
        entries.push(EntrySignature { name, params });
    }
    entries
}

/// Position of `directive` as a whole token (not a prefix of a longer one).
fn find_directive(text: &str, directive: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(found) = text[from..].find(directive) {
        let at = from + found;
        let before_ok = text[..at]
            .chars()
            .next_back()
            .is_none_or(char::is_whitespace);
        let after_ok = text[at + directive.len()..]
            .chars()
            .next()
            .is_none_or(|c| !is_identifier_char(c));
        if before_ok && after_ok {
            return Some(at);
        }
        from = at + directive.len();
    }
    None
}

fn is_identifier_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '%')
}

fn parse_params(list: &str) -> Option<Vec<EntryParam>> {
    if list.trim().is_empty() {
        return Some(Vec::new());
    }
    list.split(',').map(parse_param).collect()
}

/// `.param [.align N] .type [.ptr.space.align N] name[count]`.
fn parse_param(text: &str) -> Option<EntryParam> {
    let mut tokens = text.split_whitespace();
    if tokens.next()? != ".param" {
        return None;
    }
    let mut ty = None;
    let mut name = None;
    let mut skip_number = false;
    for token in tokens {
        if skip_number {
            skip_number = false;
            continue;
        }
        if token == ".align" || token.ends_with(".align") {
            // `.align 16` or `.ptr.global.align 16`: the number follows.
            skip_number = true;
        } else if token.starts_with(".ptr") {
            continue;
        } else if let Some(size) = scalar_bytes(token) {
            ty = Some((token.to_owned(), size));
        } else {
            name = Some(token);
        }
    }
    let (ty, size) = ty?;
    let name = name?;
    let (name, count) = match name.split_once('[') {
        Some((base, count)) => (base, count.strip_suffix(']')?.trim().parse::<u32>().ok()?),
        None => (name, 1),
    };
    Some(EntryParam {
        name: name.to_owned(),
        ty,
        bytes: size.checked_mul(count)?,
    })
}

fn scalar_bytes(ty: &str) -> Option<u32> {
    let bits: u32 = ty.strip_prefix(".")?.get(1..)?.parse().ok()?;
    let kind = ty.as_bytes().get(1)?;
    match (kind, bits) {
        (b'u' | b's' | b'b', 8 | 16 | 32 | 64) | (b'f', 16 | 32 | 64) => Some(bits / 8),
        _ => None,
    }
}

/// `ptx` without `//` and `/* */` comments (each comment becomes a space).
fn strip_comments(ptx: &str) -> String {
    let mut out = String::with_capacity(ptx.len());
    let mut rest = ptx;
    loop {
        let line = rest.find("//");
        let block = rest.find("/*");
        let (at, closer) = match (line, block) {
            (Some(l), Some(b)) if b < l => (b, "*/"),
            (Some(l), _) => (l, "\n"),
            (None, Some(b)) => (b, "*/"),
            (None, None) => break,
        };
        out.push_str(&rest[..at]);
        out.push(' ');
        match rest[at + 2..].find(closer) {
            Some(end) => rest = &rest[at + 2 + end + closer.len()..],
            None => return out,
        }
        if closer == "\n" {
            out.push('\n');
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = "\
.version 7.0
.target sm_80
.address_size 64
// .entry commented_out(.param .u32 x)
.visible .entry vadd( /* three pointers */
    .param .u64 vadd_param_0,
    .param .u64 .ptr.global.align 16 vadd_param_1,
    .param .u64 vadd_param_2,
    .param .u32 n
)
.maxntid 256, 1, 1
{ ret; }
.entry no_params
{ ret; }
.entry packed(.param .align 8 .b8 blob[24], .param .f32 alpha) { ret; }
.entry odd(.param .q32 x) { ret; }
";

    #[test]
    fn entries_are_read_with_their_parameters() {
        let entries = entry_signatures(PTX);
        let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["vadd", "no_params", "packed", "odd"]);
        let vadd = entries[0].params.as_ref().expect("vadd parses");
        let sizes: Vec<(&str, u32)> = vadd.iter().map(|p| (p.name.as_str(), p.bytes)).collect();
        assert_eq!(
            sizes,
            [
                ("vadd_param_0", 8),
                ("vadd_param_1", 8),
                ("vadd_param_2", 8),
                ("n", 4)
            ]
        );
        assert_eq!(entries[1].params, Some(vec![]));
        let packed = entries[2].params.as_ref().expect("packed parses");
        assert_eq!((packed[0].name.as_str(), packed[0].bytes), ("blob", 24));
        assert_eq!((packed[1].ty.as_str(), packed[1].bytes), (".f32", 4));
        // An unreadable parameter makes the signature unknown, not wrong.
        assert_eq!(entries[3].params, None);
    }

    #[test]
    fn arguments_are_checked_by_count_and_size() {
        let vadd = entry_signatures(PTX).remove(0);
        let good = [
            KernelArg::Pointer(1),
            KernelArg::Pointer(2),
            KernelArg::Pointer(3),
            KernelArg::U32(7),
        ];
        assert_eq!(vadd.check_arguments(&good), Ok(()));
        let short = vadd.check_arguments(&good[..3]).unwrap_err();
        assert_eq!(
            short,
            "takes 4 parameters (.u64 vadd_param_0, .u64 vadd_param_1, .u64 vadd_param_2, .u32 n) \
             but was given 3 arguments"
        );
        let swapped = [
            KernelArg::Pointer(1),
            KernelArg::Pointer(2),
            KernelArg::U32(7),
            KernelArg::U32(7),
        ];
        assert_eq!(
            vadd.check_arguments(&swapped).unwrap_err(),
            "argument 2 is a u32 (7, 4 B) but parameter `vadd_param_2` is .u64 (8 B)"
        );
        let unknown = EntrySignature {
            name: "odd".into(),
            params: None,
        };
        assert_eq!(unknown.check_arguments(&[KernelArg::U32(0)]), Ok(()));
    }

    #[test]
    fn every_parameter_pointer_reads_its_argument_s_bytes() {
        let mut map = TensorMap::zeroed();
        for (i, word) in map.opaque.iter_mut().enumerate() {
            *word = 0x0101_0101_0101_0101 * i as u64;
        }
        let args = [
            KernelArg::Pointer(0x7f00_1234_5678),
            KernelArg::U32(4096),
            KernelArg::TensorMap(map),
            KernelArg::U32(7),
        ];
        let pointers = parameter_pointers(&args);
        assert_eq!(pointers.len(), args.len());
        let read = |at: usize| {
            let bytes = args[at].bytes() as usize;
            // SAFETY: each pointer is to a value of `bytes()` bytes inside
            // `args`, which is alive.
            unsafe { std::slice::from_raw_parts(pointers[at].cast::<u8>(), bytes) }.to_vec()
        };
        assert_eq!(read(0), 0x7f00_1234_5678u64.to_le_bytes());
        assert_eq!(read(1), 4096u32.to_le_bytes());
        assert_eq!(read(3), 7u32.to_le_bytes());
        let map_bytes: Vec<u8> = map.opaque.iter().flat_map(|w| w.to_le_bytes()).collect();
        assert_eq!(read(2), map_bytes);
        assert_eq!(
            pointers[2].addr() % 64,
            0,
            "the map's host copy is 64-byte aligned"
        );
    }

    #[test]
    fn a_tensor_map_fills_a_128_byte_param_after_the_dims() {
        let ptx = ".entry tma(.param .u64 a, .param .u32 M, \
                   .param .align 64 .b8 tmap0_a[128]) { ret; }";
        let entry = entry_signatures(ptx).remove(0);
        let params = entry.params.as_ref().expect("parses");
        assert_eq!((params[2].name.as_str(), params[2].bytes), ("tmap0_a", 128));
        let map = KernelArg::TensorMap(TensorMap::zeroed());
        let args = [KernelArg::Pointer(0), KernelArg::U32(64), map];
        assert_eq!(entry.check_arguments(&args), Ok(()));
        assert_eq!(
            entry
                .check_arguments(&[KernelArg::Pointer(0), map, KernelArg::U32(64)])
                .unwrap_err(),
            "argument 1 is a tensor map (128 B) but parameter `M` is .u32 (4 B)"
        );
    }

    #[test]
    fn configurations_are_validated_before_the_driver_sees_them() {
        assert_eq!(LaunchConfig::linear(80, 1024).validate(), Ok(()));
        assert_eq!(
            LaunchConfig::new([4, 0, 1], [32, 1, 1])
                .validate()
                .unwrap_err(),
            "grid extent y is zero"
        );
        assert_eq!(
            LaunchConfig::new([1, 1, 1], [32, 32, 2])
                .validate()
                .unwrap_err(),
            "a block of 2048 threads; CUDA allows 1024"
        );
        assert_eq!(
            LaunchConfig::new([1, 70000, 1], [32, 1, 1])
                .validate()
                .unwrap_err(),
            "grid extent y is 70000; CUDA allows 65535"
        );
    }

    #[test]
    fn configurations_print_like_the_launch_syntax() {
        let config = LaunchConfig::new([8, 4, 1], [128, 1, 1]).with_dynamic_shared(96 * 1024);
        assert_eq!(
            config.to_string(),
            "<<<grid (8,4,1), block (128,1,1), dynamic shared 98304 B (96 KiB)>>>"
        );
    }

    #[test]
    fn comments_are_removed_but_lines_are_kept() {
        assert_eq!(strip_comments("a // b\nc /* d\ne */ f"), "a  \nc   f");
        assert_eq!(strip_comments("x /* open"), "x  ");
    }
}
