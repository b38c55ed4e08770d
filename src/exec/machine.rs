//! CPU executor: the memories of a launch — global allocations as byte
//! vectors with their bounds, one block's shared memory with a shadow byte
//! record (written? pending a `cp.async`, or a tensor copy's mbarrier
//! phase? last writer and readers in this barrier epoch), and the findings
//! a run collects.

use std::collections::HashSet;
use std::fmt;

/// Bits of a global address below a buffer's number: buffer `i` starts at
/// `(i + 1) << GLOBAL_SHIFT`, so an address names its allocation.
const GLOBAL_SHIFT: u32 = 36;

/// Where generic addresses of shared memory start (`cvta.shared`).
pub const SHARED_WINDOW: u64 = 1 << 60;

/// Where generic addresses of kernel parameters start (`cvta.param`): below
/// the shared window, far above every global buffer.
pub const PARAM_WINDOW: u64 = 1 << 59;

/// The executor's param space: parameter `i` is at `i * PARAM_SLOT`, a
/// slot wider than any parameter (a tensor map has 128 bytes).
pub const PARAM_SLOT: u64 = 1 << 8;

/// The global allocations of a launch.
#[derive(Clone, Debug, Default)]
pub struct Globals {
    /// Each buffer's bytes, by argument order among the buffers.
    pub buffers: Vec<Vec<u8>>,
}

impl Globals {
    /// The address buffer `index` starts at.
    pub fn base(index: usize) -> u64 {
        (index as u64 + 1) << GLOBAL_SHIFT
    }

    /// The buffer and offset of `len` bytes at `address`, when inside one.
    pub fn locate(&self, address: u64, len: u32) -> Option<(usize, usize)> {
        let index = (address >> GLOBAL_SHIFT).checked_sub(1)? as usize;
        let offset = (address & ((1 << GLOBAL_SHIFT) - 1)) as usize;
        let buffer = self.buffers.get(index)?;
        (offset + len as usize <= buffer.len()).then_some((index, offset))
    }

    /// Why `address` is outside every allocation, in words.
    pub fn describe_miss(&self, address: u64, len: u32) -> String {
        match (address >> GLOBAL_SHIFT).checked_sub(1) {
            Some(index) if (index as usize) < self.buffers.len() => format!(
                "{len} B at offset {} of buffer {index} ({} B)",
                address & ((1 << GLOBAL_SHIFT) - 1),
                self.buffers[index as usize].len()
            ),
            _ => format!("{len} B at {address:#x}, in no allocation"),
        }
    }
}

/// What the executor knows of one shared byte.
#[derive(Clone, Copy, Debug, Default)]
pub struct ByteShadow {
    /// Something wrote it.
    pub written: bool,
    /// Thread + 1 whose `cp.async` into it has not landed (0: none).
    pub pending: u32,
    /// Epoch, thread and instruction of the last write (epoch 0: none).
    pub write: Access,
    /// Epoch, thread and instruction of the last read.
    pub read: Access,
    /// Several threads read it in `read.epoch`.
    pub read_by_many: bool,
    /// The tensor copy that wrote it, until a plain store replaces it.
    pub tensor_copy: Option<TensorCopyMark>,
}

/// Shared bytes a `cp.async.bulk.tensor` wrote: a thread may read them
/// once it has seen (a successful `mbarrier.try_wait`) the end of the
/// barrier phase the copy completes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensorCopyMark {
    /// The mbarrier's shared offset.
    pub barrier: u32,
    /// The phase, counted over the block's run (re-inits go on counting).
    pub phase: u32,
    /// The copy's instruction.
    pub pc: u32,
}

/// One access to a shared byte.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Access {
    /// Barrier epoch (from 1).
    pub epoch: u32,
    /// Thread in the block.
    pub thread: u32,
    /// Instruction index.
    pub pc: u32,
}

/// A conflicting earlier access found by a new one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The earlier access.
    pub earlier: Access,
    /// Whether the earlier access was a write.
    pub earlier_wrote: bool,
    /// The byte.
    pub offset: u32,
}

/// One block's shared memory.
#[derive(Clone, Debug)]
pub struct Shared {
    /// The bytes.
    pub bytes: Vec<u8>,
    /// Per byte, what wrote and read it.
    pub shadow: Vec<ByteShadow>,
}

impl Shared {
    /// `size` bytes, all unwritten.
    pub fn new(size: usize) -> Shared {
        Shared {
            bytes: vec![0; size],
            shadow: vec![ByteShadow::default(); size],
        }
    }

    /// Whether `len` bytes at `offset` are inside.
    pub fn contains(&self, offset: u64, len: u32) -> bool {
        offset + u64::from(len) <= self.bytes.len() as u64
    }

    /// Records a read; returns the first race with a write by another
    /// thread in the same epoch.
    pub fn note_read(&mut self, range: std::ops::Range<usize>, now: Access) -> Option<Conflict> {
        let mut race = None;
        for offset in range {
            let byte = &mut self.shadow[offset];
            if race.is_none() && byte.write.epoch == now.epoch && byte.write.thread != now.thread {
                race = Some(Conflict {
                    earlier: byte.write,
                    earlier_wrote: true,
                    offset: offset as u32,
                });
            }
            if byte.read.epoch == now.epoch && byte.read.thread != now.thread {
                byte.read_by_many = true;
            } else if byte.read.epoch != now.epoch {
                byte.read_by_many = false;
            }
            byte.read = now;
        }
        race
    }

    /// Records a write of `data`; returns the first race with an access by
    /// another thread in the same epoch.
    pub fn write(&mut self, offset: usize, data: &[u8], now: Access) -> Option<Conflict> {
        let mut race = None;
        self.bytes[offset..offset + data.len()].copy_from_slice(data);
        for at in offset..offset + data.len() {
            let byte = &mut self.shadow[at];
            if race.is_none() {
                if byte.write.epoch == now.epoch && byte.write.thread != now.thread {
                    race = Some(Conflict {
                        earlier: byte.write,
                        earlier_wrote: true,
                        offset: at as u32,
                    });
                } else if byte.read.epoch == now.epoch
                    && (byte.read.thread != now.thread || byte.read_by_many)
                {
                    race = Some(Conflict {
                        earlier: byte.read,
                        earlier_wrote: false,
                        offset: at as u32,
                    });
                }
            }
            byte.written = true;
            byte.write = now;
            byte.tensor_copy = None;
        }
        race
    }
}

/// What kind of problem a finding is.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum FindingKind {
    /// A global access outside every allocation.
    GlobalOutOfBounds {
        /// Which bytes.
        detail: String,
    },
    /// A shared access beyond the block's shared memory.
    SharedOutOfBounds {
        /// The offset.
        offset: u64,
        /// Bytes accessed.
        bytes: u32,
        /// The block's shared memory size.
        size: usize,
    },
    /// A register read before anything wrote it.
    UninitialisedRegister {
        /// Its name.
        register: String,
    },
    /// A shared byte read before anything wrote it.
    UninitialisedShared {
        /// The byte.
        offset: u32,
    },
    /// Two threads touched a shared byte in one barrier epoch, one writing.
    Race {
        /// The byte.
        offset: u32,
        /// The other thread (in the block).
        other_thread: u32,
        /// The other thread's instruction, `line N: text`.
        other: String,
        /// `write after write`, `read after write`, `write after read`.
        order: &'static str,
    },
    /// An asynchronous result used before its wait.
    EarlyRead {
        /// What was read early.
        what: String,
    },
    /// An address without the alignment its instruction needs.
    Misaligned {
        /// What the address is for.
        what: &'static str,
        /// The shared offset.
        offset: u64,
        /// The alignment needed, bytes.
        alignment: u32,
    },
    /// An mbarrier used against its rules: before its init (or its init
    /// not yet visible), more arrivals than its count in a phase, more
    /// bytes completed than expected.
    Mbarrier {
        /// The barrier's shared offset.
        offset: u64,
        /// What went wrong.
        detail: String,
    },
}

/// One problem the run found, where and by whom.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Finding {
    /// What.
    pub kind: FindingKind,
    /// Block index.
    pub block: u32,
    /// Thread in the block.
    pub thread: u32,
    /// The PTX line of the instruction.
    pub line: usize,
    /// The instruction.
    pub instruction: String,
    /// The `.gph` line, from `--annotate` comments.
    pub source: Option<String>,
}

impl fmt::Display for FindingKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FindingKind::GlobalOutOfBounds { detail } => {
                write!(f, "global access out of bounds: {detail}")
            }
            FindingKind::SharedOutOfBounds {
                offset,
                bytes,
                size,
            } => write!(
                f,
                "shared access out of bounds: {bytes} B at offset {offset} of {size} B"
            ),
            FindingKind::UninitialisedRegister { register } => {
                write!(f, "read of register {register}, which nothing wrote")
            }
            FindingKind::UninitialisedShared { offset } => {
                write!(f, "read of shared byte {offset}, which nothing wrote")
            }
            FindingKind::Race {
                offset,
                other_thread,
                other,
                order,
            } => write!(
                f,
                "race on shared byte {offset} ({order}, no barrier between): thread {other_thread} at {other}"
            ),
            FindingKind::EarlyRead { what } => write!(f, "read before its wait: {what}"),
            FindingKind::Misaligned {
                what,
                offset,
                alignment,
            } => write!(
                f,
                "{what} at shared byte {offset} is not {alignment}-byte aligned"
            ),
            FindingKind::Mbarrier { offset, detail } => {
                write!(f, "mbarrier at shared byte {offset}: {detail}")
            }
        }
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "block {} thread {}, line {}: `{}`",
            self.block, self.thread, self.line, self.instruction
        )?;
        if let Some(source) = &self.source {
            write!(f, " (.gph {source})")?;
        }
        write!(f, ": {}", self.kind)
    }
}

impl FindingKind {
    fn tag(&self) -> u8 {
        match self {
            FindingKind::GlobalOutOfBounds { .. } => 0,
            FindingKind::SharedOutOfBounds { .. } => 1,
            FindingKind::UninitialisedRegister { .. } => 2,
            FindingKind::UninitialisedShared { .. } => 3,
            FindingKind::Race { .. } => 4,
            FindingKind::EarlyRead { .. } => 5,
            FindingKind::Misaligned { .. } => 6,
            FindingKind::Mbarrier { .. } => 7,
        }
    }
}

/// The findings of a run: the first of each kind at each instruction, and
/// how many there were in all.
#[derive(Clone, Debug, Default)]
pub struct Findings {
    /// Kept findings, in the order found.
    pub kept: Vec<Finding>,
    /// Every finding, kept or not.
    pub total: usize,
    seen: HashSet<(u8, usize)>,
}

impl Findings {
    /// Adds `finding` found at instruction `pc`.
    pub fn add(&mut self, pc: usize, finding: Finding) {
        self.total += 1;
        if self.seen.insert((finding.kind.tag(), pc)) {
            self.kept.push(finding);
        }
    }
}
