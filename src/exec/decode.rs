//! CPU executor: an instruction's dotted opcode → the operation it
//! performs ([`Op`]), decided once per instruction before the run. An
//! opcode the executor does not implement is an error naming it here, so a
//! kernel never runs with an instruction silently skipped.

use super::ExecError;
use super::parse::Instr;

/// A PTX scalar type as an instruction names it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Ty {
    /// `.pred`.
    Pred,
    /// `.b16`.
    B16,
    /// `.u16`.
    U16,
    /// `.s16`.
    S16,
    /// `.b32`.
    B32,
    /// `.u32`.
    U32,
    /// `.s32`.
    S32,
    /// `.b64`.
    B64,
    /// `.u64`.
    U64,
    /// `.s64`.
    S64,
    /// `.f16`.
    F16,
    /// `.bf16`.
    Bf16,
    /// `.f32`.
    F32,
    /// `.f16x2` (a b32 register).
    F16x2,
    /// `.bf16x2` (a b32 register).
    Bf16x2,
}

impl Ty {
    fn parse(text: &str) -> Option<Ty> {
        Some(match text {
            "pred" => Ty::Pred,
            "b16" => Ty::B16,
            "u16" => Ty::U16,
            "s16" => Ty::S16,
            "b32" => Ty::B32,
            "u32" => Ty::U32,
            "s32" => Ty::S32,
            "b64" => Ty::B64,
            "u64" => Ty::U64,
            "s64" => Ty::S64,
            "f16" => Ty::F16,
            "bf16" => Ty::Bf16,
            "f32" => Ty::F32,
            "f16x2" => Ty::F16x2,
            "bf16x2" => Ty::Bf16x2,
            _ => return None,
        })
    }

    /// Its width in bytes (a predicate counts as 1).
    pub fn bytes(self) -> u32 {
        match self {
            Ty::Pred => 1,
            Ty::B16 | Ty::U16 | Ty::S16 | Ty::F16 | Ty::Bf16 => 2,
            Ty::B32 | Ty::U32 | Ty::S32 | Ty::F32 | Ty::F16x2 | Ty::Bf16x2 => 4,
            Ty::B64 | Ty::U64 | Ty::S64 => 8,
        }
    }

    /// Whether integer operations on it are signed.
    pub fn is_signed(self) -> bool {
        matches!(self, Ty::S16 | Ty::S32 | Ty::S64)
    }
}

/// Integer and bitwise operations (also the predicate logic, on `.pred`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum IntOp {
    Add,
    Sub,
    MulLo,
    MulHi,
    MulWide,
    MadLo,
    MadWide,
    Shl,
    Shr,
    /// `shf.r.clamp`: the low word of `b:a` shifted right by `min(c, 32)`.
    ShfRClamp,
    And,
    Or,
    Xor,
    Not,
    Div,
    Rem,
    Min,
    Max,
    Neg,
}

/// Floating-point arithmetic (f32, f16, and packed pairs).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum FloatOp {
    Add,
    Sub,
    Mul,
    Div,
    Fma,
    Max,
    Min,
    Neg,
    Abs,
}

/// The approximate special functions.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Approx {
    Ex2,
    Lg2,
    Rsqrt,
    Rcp,
    Sqrt,
    Tanh,
    Sin,
    Cos,
}

/// `setp` comparisons.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// Memory state spaces of `ld` and `st`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Space {
    /// `.param`.
    Param,
    /// `.global`.
    Global,
    /// `.shared`.
    Shared,
}

/// `shfl.sync` modes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ShflMode {
    Up,
    Down,
    Bfly,
    Idx,
}

/// `cvta` directions.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Cvta {
    /// Generic → global (addresses are the same here).
    ToGlobal,
    /// Generic → shared.
    ToShared,
    /// Shared → generic.
    FromShared,
    /// Global → generic.
    FromGlobal,
    /// Param → generic (`cvta.param`: a kernel parameter's address, for
    /// `cp.async.bulk.tensor`'s tensor map).
    FromParam,
}

/// What one instruction does.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Op {
    Mov(Ty),
    Int(IntOp, Ty),
    Float(FloatOp, Ty),
    Approx(Approx),
    Setp(Cmp, Ty),
    Selp(Ty),
    Cvt {
        to: Ty,
        from: Ty,
    },
    Cvta(Cvta),
    Ld {
        space: Space,
        ty: Ty,
        count: u32,
    },
    St {
        space: Space,
        ty: Ty,
        count: u32,
    },
    /// `cp.async` of `bytes`; `sized`: a fourth operand, the source size,
    /// says how many of them to read (the rest are zeros).
    CpAsync {
        bytes: u32,
        sized: bool,
    },
    CpAsyncCommit,
    CpAsyncWait(u32),
    CpAsyncWaitAll,
    Ldmatrix {
        count: u32,
        trans: bool,
    },
    Mma16816 {
        inputs: Ty,
        accumulator: Ty,
    },
    Mma884,
    Wgmma {
        n: u32,
        inputs: Ty,
    },
    WgmmaFence,
    WgmmaCommit,
    WgmmaWait(u32),
    FenceProxyAsync,
    /// `cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes`:
    /// a box of a tensor map's tensor into shared memory, completing on an
    /// mbarrier.
    TensorCopy {
        /// Dims of the box (1 to 5).
        dims: u32,
    },
    /// `mbarrier.init.shared::cta.b64 [bar], count`.
    MbarrierInit,
    /// `mbarrier.arrive[.expect_tx].shared::cta.b64 state, [bar][, bytes]`.
    MbarrierArrive {
        /// `.expect_tx`: the third operand's bytes are added to the
        /// barrier's tx-count before the arrival.
        expect_tx: bool,
    },
    /// `mbarrier.try_wait.parity.shared::cta.b64 p, [bar], parity`: whether
    /// the phase of that parity has completed; a thread told no yields to
    /// the others (it spins).
    MbarrierTryWait,
    /// `setmaxnreg.{inc,dec}.sync.aligned.u32 N`: warp-wide, no effect on
    /// the CPU once its count is checked.
    Setmaxnreg,
    /// `membar.cta`, `membar.gl`, `fence.acq_rel.gpu`: the executor runs
    /// each thread's accesses in order and keeps one memory, so it only has
    /// to be known.
    Fence,
    /// `ld.acquire.gpu.global` (or `.relaxed`, `.volatile`): a load that
    /// polls memory another block writes — a grid barrier's spin. The
    /// thread waits after it until the other blocks have run, so that the
    /// value it polls can change.
    Poll(Ty),
    /// `atom.global.add` (any ordering and scope): the old value to the
    /// destination, the sum to memory.
    AtomAdd(Ty),
    /// `red.global.add[.v2|.v4].f32 [a], b`: each of `count` fp32 elements
    /// of memory gets the register's value added, subnormal inputs and
    /// results flushed to zero (as the hardware's `RED.ADD.F32.FTZ.RN`);
    /// no destination register.
    RedAddF32 {
        /// 1, 2 or 4 elements.
        count: u32,
    },
    Shfl(ShflMode),
    Bar,
    Bra,
    Ret,
}

impl Op {
    /// Whether the lanes of a warp must execute it together.
    pub fn is_collective(self) -> bool {
        matches!(
            self,
            Op::Shfl(_)
                | Op::Ldmatrix { .. }
                | Op::Mma16816 { .. }
                | Op::Mma884
                | Op::Wgmma { .. }
                | Op::Setmaxnreg
        )
    }
}

fn unknown(instr: &Instr) -> ExecError {
    ExecError::Unknown {
        opcode: instr.opcode.join("."),
        line: instr.line,
    }
}

fn int_op(name: &str, second: Option<&str>) -> Option<(IntOp, bool)> {
    // The bool: whether the second dotted part is a modifier (lo, hi, wide).
    Some(match (name, second) {
        ("add", _) => (IntOp::Add, false),
        ("sub", _) => (IntOp::Sub, false),
        ("mul", Some("lo")) => (IntOp::MulLo, true),
        ("mul", Some("hi")) => (IntOp::MulHi, true),
        ("mul", Some("wide")) => (IntOp::MulWide, true),
        ("mad", Some("lo")) => (IntOp::MadLo, true),
        ("mad", Some("wide")) => (IntOp::MadWide, true),
        ("shl", _) => (IntOp::Shl, false),
        ("shr", _) => (IntOp::Shr, false),
        ("and", _) => (IntOp::And, false),
        ("or", _) => (IntOp::Or, false),
        ("xor", _) => (IntOp::Xor, false),
        ("not", _) => (IntOp::Not, false),
        ("div", _) => (IntOp::Div, false),
        ("rem", _) => (IntOp::Rem, false),
        ("min", _) => (IntOp::Min, false),
        ("max", _) => (IntOp::Max, false),
        ("neg", _) => (IntOp::Neg, false),
        _ => return None,
    })
}

fn float_op(name: &str) -> Option<FloatOp> {
    Some(match name {
        "add" => FloatOp::Add,
        "sub" => FloatOp::Sub,
        "mul" => FloatOp::Mul,
        "div" => FloatOp::Div,
        "fma" => FloatOp::Fma,
        "max" => FloatOp::Max,
        "min" => FloatOp::Min,
        "neg" => FloatOp::Neg,
        "abs" => FloatOp::Abs,
        _ => return None,
    })
}

fn is_float(ty: Ty) -> bool {
    matches!(ty, Ty::F16 | Ty::Bf16 | Ty::F32 | Ty::F16x2 | Ty::Bf16x2)
}

fn last_ty(parts: &[&str]) -> Option<Ty> {
    parts.last().and_then(|p| Ty::parse(p))
}

fn number_after(parts: &[&str], prefix: &str) -> Option<u32> {
    parts
        .iter()
        .find_map(|p| p.strip_prefix(prefix).and_then(|n| n.parse().ok()))
}

fn imm_operand(instr: &Instr, at: usize) -> Result<u32, ExecError> {
    match instr.operands.get(at) {
        Some(super::parse::Operand::Int(n)) => Ok(*n as u32),
        _ => Err(ExecError::Operands {
            line: instr.line,
            text: instr.text.clone(),
            message: format!("operand {} must be an integer immediate", at + 1),
        }),
    }
}

/// `cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes`
/// (or `.shared::cta`), exactly: multicast, cache hints and the other
/// directions and modes are not executed.
fn tensor_copy(parts: &[&str]) -> Option<Op> {
    let [
        "cp",
        "async",
        "bulk",
        "tensor",
        dims,
        "shared::cluster" | "shared::cta",
        "global",
        "tile",
        "mbarrier::complete_tx::bytes",
    ] = parts
    else {
        return None;
    };
    let dims: u32 = dims.strip_suffix('d')?.parse().ok()?;
    (1..=5).contains(&dims).then_some(Op::TensorCopy { dims })
}

/// `mbarrier.init`, `.arrive`, `.arrive.expect_tx` and `.try_wait.parity`
/// on `.shared::cta` (or `.shared`) `.b64` barriers, arrive with an
/// optional `.release.cta`, try_wait with an optional `.acquire.cta`.
fn mbarrier(parts: &[&str]) -> Option<Op> {
    let ["mbarrier", words @ .., "shared::cta" | "shared", "b64"] = parts else {
        return None;
    };
    match words {
        ["init"] => Some(Op::MbarrierInit),
        ["arrive", order @ ..] => {
            let (expect_tx, order) = match order {
                ["expect_tx", order @ ..] => (true, order),
                order => (false, order),
            };
            matches!(order, [] | ["release", "cta"]).then_some(Op::MbarrierArrive { expect_tx })
        }
        ["try_wait", "parity", order @ ..] => {
            matches!(order, [] | ["acquire", "cta"]).then_some(Op::MbarrierTryWait)
        }
        _ => None,
    }
}

/// Decides what `instr` does, or names it as unknown.
pub fn decode(instr: &Instr) -> Result<Op, ExecError> {
    let parts: Vec<&str> = instr.opcode.iter().map(String::as_str).collect();
    let head = parts[0];
    let has = |word: &str| parts.contains(&word);
    let op = match head {
        "mov" => last_ty(&parts).map(Op::Mov),
        "ld" if has("global") && (has("acquire") || has("relaxed") || has("volatile")) => {
            last_ty(&parts).map(Op::Poll)
        }
        "shf" if has("r") && has("clamp") => {
            last_ty(&parts).map(|ty| Op::Int(IntOp::ShfRClamp, ty))
        }
        "red" if has("global") && has("add") => last_ty(&parts)
            .filter(|ty| *ty == Ty::F32)
            .map(|_| Op::RedAddF32 {
                count: number_after(&parts, "v").unwrap_or(1),
            })
            .filter(|op| matches!(op, Op::RedAddF32 { count: 1 | 2 | 4 })),
        "atom" if has("global") && has("add") => last_ty(&parts)
            .filter(|ty| matches!(ty, Ty::U32 | Ty::S32 | Ty::B32))
            .map(Op::AtomAdd),
        "ld" | "st" => {
            let space = if has("param") {
                Space::Param
            } else if has("global") {
                Space::Global
            } else if has("shared") {
                Space::Shared
            } else {
                return Err(unknown(instr));
            };
            let count = number_after(&parts, "v").unwrap_or(1);
            last_ty(&parts).map(|ty| {
                if head == "ld" {
                    Op::Ld { space, ty, count }
                } else {
                    Op::St { space, ty, count }
                }
            })
        }
        "setp" => {
            let cmp = match parts.get(1).copied() {
                Some("eq") => Some(Cmp::Eq),
                Some("ne") => Some(Cmp::Ne),
                Some("lt") => Some(Cmp::Lt),
                Some("le") => Some(Cmp::Le),
                Some("gt") => Some(Cmp::Gt),
                Some("ge") => Some(Cmp::Ge),
                _ => None,
            };
            cmp.zip(last_ty(&parts)).map(|(c, t)| Op::Setp(c, t))
        }
        "selp" => last_ty(&parts).map(Op::Selp),
        "cvt" => {
            let types: Vec<Ty> = parts[1..].iter().filter_map(|p| Ty::parse(p)).collect();
            match types.as_slice() {
                [to, from] => Some(Op::Cvt {
                    to: *to,
                    from: *from,
                }),
                _ => None,
            }
        }
        "cvta" => match (has("to"), has("shared"), has("global"), has("param")) {
            (true, false, true, false) => Some(Op::Cvta(Cvta::ToGlobal)),
            (true, true, false, false) => Some(Op::Cvta(Cvta::ToShared)),
            (false, true, false, false) => Some(Op::Cvta(Cvta::FromShared)),
            (false, false, true, false) => Some(Op::Cvta(Cvta::FromGlobal)),
            (false, false, false, true) => Some(Op::Cvta(Cvta::FromParam)),
            _ => None,
        },
        "ex2" | "lg2" | "rsqrt" | "rcp" | "sqrt" | "tanh" | "sin" | "cos"
            if last_ty(&parts) == Some(Ty::F32) =>
        {
            let function = match head {
                "ex2" => Approx::Ex2,
                "lg2" => Approx::Lg2,
                "rsqrt" => Approx::Rsqrt,
                "rcp" => Approx::Rcp,
                "sqrt" => Approx::Sqrt,
                "tanh" => Approx::Tanh,
                "sin" => Approx::Sin,
                _ => Approx::Cos,
            };
            // rcp.rn and sqrt.rn are exact roundings; f64 then f32 is
            // correctly rounded for them too.
            Some(Op::Approx(function))
        }
        "cp" if has("async") && has("bulk") => tensor_copy(&parts),
        "mbarrier" => mbarrier(&parts),
        "setmaxnreg"
            if matches!(parts.get(1), Some(&"inc" | &"dec"))
                && parts[2..] == ["sync", "aligned", "u32"] =>
        {
            imm_operand(instr, 0)?;
            Some(Op::Setmaxnreg)
        }
        "cp" if has("async") => match parts.get(2).copied() {
            Some("cg" | "ca") => Some(Op::CpAsync {
                bytes: imm_operand(instr, 2)?,
                sized: instr.operands.len() == 4,
            }),
            Some("commit_group") => Some(Op::CpAsyncCommit),
            Some("wait_group") => Some(Op::CpAsyncWait(imm_operand(instr, 0)?)),
            Some("wait_all") => Some(Op::CpAsyncWaitAll),
            _ => None,
        },
        "ldmatrix" if has("m8n8") && has("b16") && has("shared") => {
            number_after(&parts, "x").map(|count| Op::Ldmatrix {
                count,
                trans: has("trans"),
            })
        }
        "mma" if has("m16n8k16") && has("row") && has("col") => {
            let types: Vec<Ty> = parts.iter().filter_map(|p| Ty::parse(p)).collect();
            match types.as_slice() {
                [d, a, b, c] if a == b && d == c => Some(Op::Mma16816 {
                    inputs: *a,
                    accumulator: *d,
                }),
                _ => None,
            }
        }
        "mma" if has("m8n8k4") && has("row") && has("col") => {
            let types: Vec<Ty> = parts.iter().filter_map(|p| Ty::parse(p)).collect();
            (types == [Ty::F32, Ty::F16, Ty::F16, Ty::F32]).then_some(Op::Mma884)
        }
        "wgmma" => match parts.get(1).copied() {
            Some("mma_async") => {
                let shape = parts.iter().find(|p| p.starts_with("m64n"));
                let n = shape.and_then(|s| s[4..].split('k').next()?.parse().ok());
                let types: Vec<Ty> = parts.iter().filter_map(|p| Ty::parse(p)).collect();
                match (n, types.as_slice()) {
                    (Some(n), [Ty::F32, a, b]) if a == b => Some(Op::Wgmma { n, inputs: *a }),
                    _ => None,
                }
            }
            Some("fence") => Some(Op::WgmmaFence),
            Some("commit_group") => Some(Op::WgmmaCommit),
            Some("wait_group") => Some(Op::WgmmaWait(imm_operand(instr, 0)?)),
            _ => None,
        },
        "fence" if parts.get(1) == Some(&"proxy") && parts.get(2) == Some(&"async") => {
            Some(Op::FenceProxyAsync)
        }
        // Makes an mbarrier's init visible to the async proxy and the
        // cluster: the executor has one memory, the init is visible at once
        // (the bar.sync that must follow is still checked).
        "fence" if parts.get(1) == Some(&"mbarrier_init") => Some(Op::Fence),
        "membar" if matches!(parts.get(1), Some(&"cta" | &"gl")) => Some(Op::Fence),
        "fence" if matches!(parts.get(1), Some(&"acq_rel" | &"sc")) => Some(Op::Fence),
        "shfl" if has("sync") && last_ty(&parts) == Some(Ty::B32) => {
            let mode = match parts.get(2).copied() {
                Some("up") => Some(ShflMode::Up),
                Some("down") => Some(ShflMode::Down),
                Some("bfly") => Some(ShflMode::Bfly),
                Some("idx") => Some(ShflMode::Idx),
                _ => None,
            };
            mode.map(Op::Shfl)
        }
        "bar" | "barrier" if has("sync") || parts.len() == 1 => Some(Op::Bar),
        "bra" => Some(Op::Bra),
        "ret" | "exit" => Some(Op::Ret),
        _ => {
            let ty = last_ty(&parts);
            match ty {
                Some(ty) if is_float(ty) => float_op(head).map(|op| Op::Float(op, ty)),
                Some(ty) => int_op(head, parts.get(1).copied()).map(|(op, _)| Op::Int(op, ty)),
                None => None,
            }
        }
    };
    op.ok_or_else(|| unknown(instr))
}
