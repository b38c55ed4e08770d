//! Drawing: the built-in thread-data maps of the warp-wide instructions —
//! `ldmatrix` (`.x1/.x2/.x4`, `.trans`), `mma.m16n8k16` (f16 and bf16
//! inputs, and two of its C tiles read as its A), Volta's `mma.m8n8k4`
//! (quad pairs, and the 16×16×8 macro-MMA built of them), Hopper's
//! warpgroup `wgmma.m64nNk16` (its accumulators, and its operands in shared
//! memory, `wgmma_operand`) and `ldmatrix.x4` feeding the A of
//! `mma.m16n8k16` (`linked`) — drawn from the atoms' tables
//! (`crate::atoms`), element by element.

use std::fmt;
use std::str::FromStr;

use crate::atoms::{self, Fragment, LdmatrixCount, Major, SharedSwizzle};

use super::thread_map::{ColorBy, Owner, ThreadMap, element_view, thread_view};
use super::{Style, VizError};

/// The input element type of an `mma.m16n8k16` (the fragments are the same
/// for both; only the caption differs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MmaInput {
    /// `.f16` inputs.
    F16,
    /// `.bf16` inputs.
    Bf16,
}

/// A built-in thread-data map, named as the REPL's `:atom` names it:
/// `ldmatrix.x1`, `ldmatrix.x4.trans`, `mma.m16n8k16` (= `.f16`),
/// `mma.m16n8k16.bf16`, `mma.m8n8k4`.
///
/// Rule: [`AtomName::maps`] gives, for each operand, which lane holds which
/// element as which value; `Display` and `FromStr` round-trip.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomName {
    /// `ldmatrix.sync.aligned.m8n8.{x1,x2,x4}[.trans].shared.b16`.
    Ldmatrix {
        /// How many matrices.
        count: LdmatrixCount,
        /// Whether each matrix is delivered transposed.
        trans: bool,
    },
    /// `mma.sync.aligned.m16n8k16.row.col` with f16 or bf16 inputs.
    MmaM16n8k16 {
        /// The input type.
        input: MmaInput,
    },
    /// The accumulators of two column-adjacent `mma.m16n8k16` tiles beside
    /// the A fragment of the next multiply: the identity attention uses to
    /// pass P from one multiply to the next in registers, drawn both ways
    /// with the proof's verdict (`atoms::Mma::c_pair_is_a`).
    MmaCPairAsA,
    /// `mma.sync.aligned.m8n8k4.row.col` (Volta): four quad-pair products.
    MmaM8n8k4,
    /// `wgmma.mma_async.sync.aligned.m64nNk16` (Hopper): the accumulators
    /// of a warpgroup; A and B come from shared memory, held by no thread.
    WgmmaM64nNk16 {
        /// B's columns: a multiple of 8 from 8 to 256.
        n: i64,
    },
    /// An operand of `wgmma.m64nNk16` in shared memory: the byte each
    /// element is read from, under a descriptor's layout, and the
    /// descriptor (`atoms::MatrixDescriptor`).
    WgmmaShared {
        /// B's columns: a multiple of 8 from 8 to 256.
        n: i64,
        /// A (64×16) or B (16×N).
        operand: WgmmaOperand,
        /// The descriptor's layout.
        swizzle: SharedSwizzle,
        /// K-major, or MN-major (the transpose bit).
        major: Major,
    },
    /// Volta's 16×16×8 macro-MMA of seed 001: `mma.m8n8k4` twice per quad
    /// pair (`atoms::volta_macro_m16n16k8`).
    VoltaMacro,
    /// `ldmatrix.x4` loading the A of `mma.m16n8k16`: shared memory →
    /// registers → operand, in the quadrant order the multiply needs.
    LdmatrixForMmaA,
}

/// Which operand of a `wgmma` a shared-memory picture shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WgmmaOperand {
    /// A, 64×16 (row m, column k).
    A,
    /// B, 16×N (row k, column n).
    B,
}

/// The widths of B a `wgmma.m64nNk16` has: multiples of 8 up to 256.
fn wgmma_width(n: i64) -> bool {
    n % 8 == 0 && (8..=256).contains(&n)
}

impl AtomName {
    /// Every built-in atom, in the order the REPL lists them.
    pub fn all() -> Vec<AtomName> {
        let mut all = Vec::new();
        for trans in [false, true] {
            for count in [LdmatrixCount::X1, LdmatrixCount::X2, LdmatrixCount::X4] {
                all.push(AtomName::Ldmatrix { count, trans });
            }
        }
        all.push(AtomName::MmaM16n8k16 {
            input: MmaInput::F16,
        });
        all.push(AtomName::MmaM16n8k16 {
            input: MmaInput::Bf16,
        });
        all.push(AtomName::MmaCPairAsA);
        all.push(AtomName::MmaM8n8k4);
        all.push(AtomName::VoltaMacro);
        all.push(AtomName::LdmatrixForMmaA);
        // Every N from 8 to 256 draws; the list names a few.
        for n in [8, 16, 32, 64] {
            all.push(AtomName::WgmmaM64nNk16 { n });
        }
        for operand in [WgmmaOperand::A, WgmmaOperand::B] {
            all.push(AtomName::WgmmaShared {
                n: 64,
                operand,
                swizzle: SharedSwizzle::Bytes128,
                major: Major::K,
            });
        }
        all
    }

    /// The maps of this atom, one per operand: for `ldmatrix` the row
    /// addresses (threads only) then the values received; for `mma` A, B
    /// and C/D; for `ldmatrix` feeding `mma`, the addresses and the values
    /// placed where the multiply wants them, then its A fragment. A
    /// `wgmma` operand in shared memory has none (no thread holds it; its
    /// picture is of bytes).
    pub fn maps(&self) -> Vec<ThreadMap> {
        // The shapes below are constants well inside ThreadMap's limits and
        // the formulas stay inside them, so building cannot fail; an empty
        // list would only hide a bug, which the tests would catch.
        let maps = match *self {
            AtomName::Ldmatrix { count, trans } => ldmatrix_maps(self, count, trans),
            AtomName::MmaM16n8k16 { input } => mma_m16n8k16_maps(input),
            AtomName::MmaCPairAsA => c_pair_as_a_maps(),
            AtomName::MmaM8n8k4 => mma_m8n8k4_maps(),
            AtomName::WgmmaM64nNk16 { n } => wgmma_maps(n),
            AtomName::WgmmaShared { .. } => Ok(Vec::new()),
            AtomName::VoltaMacro => volta_macro_maps(),
            AtomName::LdmatrixForMmaA => {
                super::linked::ldmatrix_for_mma_a().map(|linked| linked.maps)
            }
        };
        maps.unwrap_or_default()
    }

    /// What the instruction does, for the first caption line.
    fn summary(&self) -> String {
        match *self {
            AtomName::Ldmatrix { count, trans } => {
                let n = count.matrices();
                let how = if trans {
                    "transposed: each thread gets two neighbours of a column"
                } else {
                    "each thread gets two neighbours of a row"
                };
                let (matrices, registers) = if n == 1 {
                    ("1 matrix".to_string(), "1 register".to_string())
                } else {
                    (format!("{n} matrices"), format!("{n} registers"))
                };
                format!(
                    "ldmatrix.sync.aligned.m8n8.x{n}{}.shared.b16: loads {matrices} of 8×8 16-bit elements from shared memory; every thread receives {registers}, one per matrix; {how}",
                    if trans { ".trans" } else { "" }
                )
            }
            AtomName::MmaM16n8k16 { input } => {
                let ty = input_name(input);
                format!(
                    "mma.sync.aligned.m16n8k16.row.col.f32.{ty}.{ty}.f32 (and .f16 accumulators): D (16×8) = A (16×16) · B (16×8) + C; lane = 4g + t"
                )
            }
            AtomName::MmaCPairAsA => {
                let verdict = match atoms::mma_m16n8k16().c_pair_is_a() {
                    Ok(()) => "the same: every thread holds the same element as the same value in both (checked element by element from the atom tables, as the instruction selection checks it before it accepts such an A)".to_string(),
                    Err(mismatch) => format!("NOT the same: {mismatch}"),
                };
                format!(
                    "mma.m16n8k16: the f32 accumulators of two 16×8 tiles side by side (columns 0–7 then 8–15; vE of the right tile drawn as v(E+4)), rounded to 16 bits in pairs, against the A fragment of a 16×16 k-step: {verdict}. So P = softmax(S) goes from the multiply S = Q·Kᵀ to O += P·V in the registers that hold it"
                )
            }
            AtomName::MmaM8n8k4 => "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32 (Volta): four independent 8×8×4 products, one per quad pair q = lanes 4q..4q+3 and 4q+16..4q+19, drawn as block (q%2, q/2)".to_string(),
            AtomName::WgmmaM64nNk16 { n } => format!(
                "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.f16.f16 (sm_90a): D (64×{n}, f32) += A (64×16) · B (16×{n}) for a warpgroup of 128 threads; A and B are read from shared memory through matrix descriptors (`:atom wgmma.m64n{n}k16 A sw128` draws where each element is read from), so no thread holds them; warp w holds rows 16w..16w+15 as the mma.m16n8 C fragment, repeated every 8 columns (thread T = 32w + 4g + t)"
            ),
            AtomName::WgmmaShared { n, operand, swizzle, major } => {
                super::wgmma_operand::summary(n, operand, swizzle, major)
            }
            AtomName::VoltaMacro => "Volta's 16×16×8 macro-MMA (seed 001, Figure 2): C (16×16, f32) += A (16×8) · B (8×16) for a warp; quad pair q (lanes 4q..4q+3 and 4q+16..4q+19) runs mma.m8n8k4 twice, on k 0-3 then k 4-7, into the 8×8 block (q%2, q/2) of C, so each element of A and B is held by two threads (cells `Tt:vV+1`) and each thread holds 8 values of A (vE, E ≥ 4: the second k step), 8 of B and 8 accumulators".to_string(),
            AtomName::LdmatrixForMmaA => super::linked::summary(),
        }
    }
}

fn input_name(input: MmaInput) -> &'static str {
    match input {
        MmaInput::F16 => "f16",
        MmaInput::Bf16 => "bf16",
    }
}

/// The names `FromStr` accepts: `ldmatrix.x4.trans`, `mma.m16n8k16.bf16`…
impl fmt::Display for AtomName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            AtomName::Ldmatrix { count, trans } => write!(
                f,
                "ldmatrix.x{}{}",
                count.matrices(),
                if trans { ".trans" } else { "" }
            ),
            AtomName::MmaM16n8k16 { input } => write!(f, "mma.m16n8k16.{}", input_name(input)),
            AtomName::MmaCPairAsA => f.write_str("mma.m16n8k16.c-as-a"),
            AtomName::MmaM8n8k4 => f.write_str("mma.m8n8k4"),
            AtomName::WgmmaM64nNk16 { n } => write!(f, "wgmma.m64n{n}k16"),
            AtomName::WgmmaShared {
                n,
                operand,
                swizzle,
                major,
            } => {
                let operand = match operand {
                    WgmmaOperand::A => "A",
                    WgmmaOperand::B => "B",
                };
                write!(f, "wgmma.m64n{n}k16 {operand} {}", swizzle.word())?;
                match major {
                    Major::K => Ok(()),
                    Major::Mn => f.write_str(" mn-major"),
                }
            }
            AtomName::VoltaMacro => f.write_str("mma.m8n8k4.macro"),
            AtomName::LdmatrixForMmaA => f.write_str("ldmatrix.x4 for mma.m16n8k16.A"),
        }
    }
}

/// Case-insensitive; `mma.m16n8k16` alone means f16 inputs; words may be
/// separated by any blanks. `wgmma.m64nNk16` takes every N of the
/// instruction, and after it `A` or `B`, then optionally the layout
/// (`none`, `sw32`, `sw64`, `sw128`: the default) and `mn-major`.
impl FromStr for AtomName {
    type Err = VizError;

    fn from_str(text: &str) -> Result<AtomName, VizError> {
        let wanted = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let wanted = wanted.to_ascii_lowercase();
        if wanted == "mma.m16n8k16" {
            return Ok(AtomName::MmaM16n8k16 {
                input: MmaInput::F16,
            });
        }
        let all = AtomName::all();
        let unknown = || VizError::UnknownAtom {
            name: text.trim().to_string(),
            known: all
                .iter()
                .map(ToString::to_string)
                .chain([
                    "wgmma.m64nNk16 (N = 8, 16, …, 256) [A|B [none|sw32|sw64|sw128] [mn-major]]"
                        .to_string(),
                ])
                .collect::<Vec<_>>()
                .join(", "),
        };
        let mut words = wanted.split(' ');
        let first = words.next().unwrap_or_default();
        let wgmma_n = first
            .strip_prefix("wgmma.m64n")
            .and_then(|rest| rest.strip_suffix("k16"))
            .and_then(|n| n.parse::<i64>().ok())
            .filter(|&n| wgmma_width(n));
        let Some(n) = wgmma_n else {
            return all
                .iter()
                .find(|name| name.to_string().to_ascii_lowercase() == wanted)
                .copied()
                .ok_or_else(unknown);
        };
        let operand = match words.next() {
            None => return Ok(AtomName::WgmmaM64nNk16 { n }),
            Some("a") => WgmmaOperand::A,
            Some("b") => WgmmaOperand::B,
            Some(_) => return Err(unknown()),
        };
        let mut swizzle = SharedSwizzle::Bytes128;
        let mut major = Major::K;
        let mut rest: Vec<&str> = words.collect();
        if let Some(&word) = rest.first()
            && let Some(&mode) = SharedSwizzle::ALL.iter().find(|mode| mode.word() == word)
        {
            swizzle = mode;
            rest.remove(0);
        }
        match rest.as_slice() {
            [] => {}
            ["mn-major"] => major = Major::Mn,
            [..] => return Err(unknown()),
        }
        Ok(AtomName::WgmmaShared {
            n,
            operand,
            swizzle,
            major,
        })
    }
}

fn owner(lane: i64, value: i64) -> Owner {
    Owner {
        thread: lane,
        value,
    }
}

/// Puts every element of `fragment` into `map`, thread `i` drawn as
/// `lane(i)` and element `(row, col)` at `(row, col) + at`.
fn draw(
    map: &mut ThreadMap,
    fragment: &Fragment,
    lane: impl Fn(i64) -> Result<i64, VizError>,
    at: (i64, i64),
) -> Result<(), VizError> {
    for (thread, value, row, col) in fragment.elements() {
        map.assign(
            (at.0 + row) as usize,
            (at.1 + col) as usize,
            owner(lane(thread)?, value),
        )?;
    }
    Ok(())
}

/// `ldmatrix`: matrix `j` is drawn at block `(j / 2, j % 2)` of 8×8 blocks
/// (the paper's figure: threads 8–15 address the top-right matrix), as the
/// atom places it.
fn ldmatrix_maps(
    name: &AtomName,
    count: LdmatrixCount,
    trans: bool,
) -> Result<Vec<ThreadMap>, VizError> {
    let atom = atoms::ldmatrix(count, trans);
    let (rows, cols) = (atom.values.rows as usize, atom.values.cols as usize);
    let placement = match count {
        LdmatrixCount::X1 => "",
        LdmatrixCount::X2 => "; matrix j at columns 8j..8j+7",
        LdmatrixCount::X4 => "; matrix j at block (j/2, j%2)",
    };
    let mut addresses = ThreadMap::new(
        format!("{name}: thread → row address (matrix j = threads 8j..8j+7{placement})"),
        rows,
        cols,
    )?
    .with_blocks(8, 8)
    .threads_only();
    draw(&mut addresses, &atom.addresses, Ok, (0, 0))?;
    let mut values = ThreadMap::new(
        format!(
            "{name}: thread:value received (vE = element E: register d[E/2], its low half when E is even)"
        ),
        rows,
        cols,
    )?
    .with_blocks(8, 8);
    draw(&mut values, &atom.values, Ok, (0, 0))?;
    Ok(vec![addresses, values])
}

/// `mma.m16n8k16`: A is `A[m][k]` (16×16), B is `B[k][n]` (16×8), C/D is
/// `C[m][n]` (16×8).
fn mma_m16n8k16_maps(input: MmaInput) -> Result<Vec<ThreadMap>, VizError> {
    let ty = input_name(input);
    let atom = atoms::mma_m16n8k16();
    let mut a = ThreadMap::new(
        format!("mma.m16n8k16 A (16×16 {ty}, row m, column k): vE is register a[E/2], low half when E is even"),
        16,
        16,
    )?
    .with_blocks(8, 8);
    let mut b = ThreadMap::new(
        format!("mma.m16n8k16 B (16×8 {ty}, row k, column n): vE is register b[E/2], low half when E is even"),
        16,
        8,
    )?
    .with_blocks(8, 8);
    let mut c = ThreadMap::new(
        "mma.m16n8k16 C/D (16×8, row m, column n): f32 accumulators: vE is register c[E]; f16: the E%2 half of c[E/2]",
        16,
        8,
    )?
    .with_blocks(8, 8);
    let lane = |thread| Ok(atom.lanes.eval(thread)?);
    for (map, fragment) in [(&mut a, &atom.a), (&mut b, &atom.b), (&mut c, &atom.c)] {
        draw(map, fragment, lane, (0, 0))?;
    }
    Ok(vec![a, b, c])
}

/// Two C tiles of `mma.m16n8k16` side by side (the right tile's values
/// numbered after the left's), then the A fragment: the same picture when
/// the identity holds.
fn c_pair_as_a_maps() -> Result<Vec<ThreadMap>, VizError> {
    let atom = atoms::mma_m16n8k16();
    let mut pair = ThreadMap::new(
        "two C tiles as 16 bits (16×16, row m, column n of S = column k of P): vE, E < 4, is c[E] of the left tile; v(E+4) is c[E] of the right",
        16,
        16,
    )?
    .with_blocks(8, 8);
    let lane = |thread| Ok(atom.lanes.eval(thread)?);
    let values = atom.c.values();
    for (thread, value, row, col) in atom.c.elements() {
        for tile in 0..2 {
            pair.assign(
                row as usize,
                (col + tile * atom.c.cols) as usize,
                owner(lane(thread)?, value + tile * values),
            )?;
        }
    }
    let mut a = ThreadMap::new(
        "mma.m16n8k16 A (16×16, row m, column k): vE is register a[E/2], low half when E is even",
        16,
        16,
    )?
    .with_blocks(8, 8);
    draw(&mut a, &atom.a, lane, (0, 0))?;
    Ok(vec![pair, a])
}

/// `mma.m8n8k4`: quad pair `q` has its own A (8×4), B (4×8) and C/D (8×8),
/// drawn at block `(q % 2, q / 2)`.
fn mma_m8n8k4_maps() -> Result<Vec<ThreadMap>, VizError> {
    let atom = atoms::mma_m8n8k4();
    let mut a = ThreadMap::new(
        "mma.m8n8k4 A (8×4 f16 per quad pair, row m, column k): vE is register a[E/2], low half when E is even",
        16,
        8,
    )?
    .with_blocks(8, 4);
    let mut b = ThreadMap::new(
        "mma.m8n8k4 B (4×8 f16 per quad pair, row k, column n): vE is register b[E/2], low half when E is even",
        8,
        16,
    )?
    .with_blocks(4, 8);
    let mut c = ThreadMap::new(
        "mma.m8n8k4 C/D (8×8 f32 per quad pair, row m, column n): vE is register c[E]",
        16,
        16,
    )?
    .with_blocks(8, 8);
    for q in 0..atom.instances.size() {
        let base = atom.instances.eval(q)?;
        let lane = |thread| Ok(base + atom.lanes.eval(thread)?);
        let (block_row, block_col) = (q % 2, q / 2);
        for (map, fragment) in [(&mut a, &atom.a), (&mut b, &atom.b), (&mut c, &atom.c)] {
            let at = (block_row * fragment.rows, block_col * fragment.cols);
            draw(map, fragment, lane, at)?;
        }
    }
    Ok(vec![a, b, c])
}

/// Volta's macro-MMA: A (16×8), B (8×16) and C/D (16×16), quad pair q's
/// blocks where `atoms::MacroMma::origin` puts them.
fn volta_macro_maps() -> Result<Vec<ThreadMap>, VizError> {
    let macro_mma = atoms::volta_macro_m16n16k8();
    let (m, n, k) = macro_mma.shape();
    let (m, n, k) = (m as usize, n as usize, k as usize);
    let a = ThreadMap::new(
        "mma.m8n8k4.macro A (16×8 f16, row m, column k): vE, E < 4, is register a[E/2] of the first mma.m8n8k4 (k 0-3); E ≥ 4, of the second (k 4-7)",
        m,
        k,
    )?
    .with_blocks(8, 4);
    let b = ThreadMap::new(
        "mma.m8n8k4.macro B (8×16 f16, row k, column n): vE, E < 4, is register b[E/2] of the first mma.m8n8k4 (k 0-3); E ≥ 4, of the second (k 4-7)",
        k,
        n,
    )?
    .with_blocks(4, 8);
    let c = ThreadMap::new(
        "mma.m8n8k4.macro C/D (16×16 f32, row m, column n): vE is register c[E], the accumulator both k steps add into",
        m,
        n,
    )?
    .with_blocks(8, 8);
    let mut maps = [a, b, c];
    let elements = [
        macro_mma.a_elements(),
        macro_mma.b_elements(),
        macro_mma.c_elements(),
    ];
    for (map, elements) in maps.iter_mut().zip(elements) {
        for e in elements {
            map.assign(e.row as usize, e.col as usize, owner(e.lane, e.value))?;
        }
    }
    Ok(maps.into())
}

/// `wgmma.m64nNk16`: the accumulators (64 × n), thread `T` of the
/// warpgroup drawn as `T`, in blocks of the 16 × 8 tiles a warp's `mma.m16n8`
/// fragment covers.
fn wgmma_maps(n: i64) -> Result<Vec<ThreadMap>, VizError> {
    let fragment = atoms::wgmma_m64nnk16_accumulators(n);
    let mut c = ThreadMap::new(
        format!(
            "wgmma.m64n{n}k16 D (64×{n}, row m, column n): f32 accumulators, vE is register d[E]"
        ),
        64,
        n as usize,
    )?
    .with_blocks(16, 8);
    draw(&mut c, &fragment, Ok, (0, 0))?;
    Ok(vec![c])
}

/// The figures of a built-in atom: a caption saying what the instruction
/// does, then for each operand its element → owner grid (cells `T4:v1`:
/// lane 4, value 1); for data operands also the thread → elements table.
/// For `ldmatrix` the first figure is which thread supplies each row's
/// address (cells `T3`), the second which thread receives each value.
///
/// ```
/// use graphene::viz::{AtomName, Style, atom};
/// let name: AtomName = "ldmatrix.x1".parse().unwrap();
/// let text = atom(name, &Style::plain(120));
/// assert!(text.contains("0 |  T0:v0  T0:v1  T1:v0  T1:v1  T2:v0  T2:v1  T3:v0  T3:v1"));
/// ```
pub fn atom(name: AtomName, style: &Style) -> String {
    atom_colored_by(name, style, ColorBy::Block)
}

/// [`atom`] with cells coloured by `color_by` (the text is the same).
pub fn atom_colored_by(name: AtomName, style: &Style, color_by: ColorBy) -> String {
    let mut out = String::new();
    super::table::caption(&name.summary(), style, &mut out);
    if let AtomName::WgmmaShared {
        n,
        operand,
        swizzle,
        major,
    } = name
    {
        out.push('\n');
        out.push_str(&super::wgmma_operand::draw(
            n, operand, swizzle, major, style,
        ));
        return out;
    }
    for map in name.maps() {
        let map = map.colored_by(color_by);
        out.push('\n');
        out.push_str(&element_view(&map, style));
        // A threads-only map (ldmatrix's row addresses) has no values to list.
        if map.shows_values() {
            out.push('\n');
            out.push_str(&thread_view(&map, style));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for name in AtomName::all() {
            assert_eq!(name.to_string().parse::<AtomName>().unwrap(), name);
        }
        assert_eq!(
            " MMA.M16N8K16 ".parse::<AtomName>().unwrap(),
            AtomName::MmaM16n8k16 {
                input: MmaInput::F16
            }
        );
        let err = "ldmatrix.x3".parse::<AtomName>().unwrap_err();
        assert!(err.to_string().contains("ldmatrix.x4.trans"), "{err}");
        // Every width of the instruction, listed or not.
        for n in (8..=256).step_by(8) {
            let name = AtomName::WgmmaM64nNk16 { n };
            assert_eq!(name.to_string().parse::<AtomName>().unwrap(), name);
        }
        for bad in ["wgmma.m64n12k16", "wgmma.m64n264k16", "wgmma.m64n0k16"] {
            assert!(bad.parse::<AtomName>().is_err(), "{bad}");
        }
        // Operands in shared memory: every layout, both majors, round trip;
        // the layout defaults to the 128-byte swizzle.
        for swizzle in SharedSwizzle::ALL {
            for major in [Major::K, Major::Mn] {
                for operand in [WgmmaOperand::A, WgmmaOperand::B] {
                    let name = AtomName::WgmmaShared {
                        n: 136,
                        operand,
                        swizzle,
                        major,
                    };
                    assert_eq!(name.to_string().parse::<AtomName>().unwrap(), name);
                }
            }
        }
        assert_eq!(
            "WGMMA.M64N128K16   b".parse::<AtomName>().unwrap(),
            AtomName::WgmmaShared {
                n: 128,
                operand: WgmmaOperand::B,
                swizzle: SharedSwizzle::Bytes128,
                major: Major::K
            }
        );
        for bad in [
            "wgmma.m64n64k16 C",
            "wgmma.m64n64k16 A sw16",
            "wgmma.m64n64k16 A sw64 k-major",
        ] {
            assert!(bad.parse::<AtomName>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_wgmma_warp_holds_its_sixteen_rows_as_the_mma_c_fragment() {
        let maps = AtomName::WgmmaM64nNk16 { n: 16 }.maps();
        let [d] = &maps[..] else { panic!("one map") };
        let mma = &AtomName::MmaM16n8k16 {
            input: MmaInput::F16,
        }
        .maps()[2];
        for row in 0..64 {
            for col in 0..16 {
                let owner = &d.owners(row, col)[0];
                let warp = row as i64 / 16;
                assert_eq!(owner.thread / 32, warp, "({row},{col})");
                // Lane and value as the mma.m16n8 C fragment has them, the
                // value shifted by 4 per 8-column repeat.
                let c = &mma.owners(row % 16, col % 8)[0];
                assert_eq!(owner.thread % 32, c.thread, "({row},{col})");
                assert_eq!(owner.value, c.value + 4 * (col as i64 / 8), "({row},{col})");
            }
        }
    }

    #[test]
    fn two_c_tiles_draw_exactly_as_the_a_fragment() {
        let maps = AtomName::MmaCPairAsA.maps();
        let (pair, a) = (&maps[0], &maps[1]);
        for row in 0..16 {
            for col in 0..16 {
                assert_eq!(pair.owners(row, col), a.owners(row, col), "({row},{col})");
            }
        }
    }

    #[test]
    fn every_atom_has_its_operands_fully_owned() {
        for name in AtomName::all() {
            let maps = name.maps();
            let expected = match name {
                AtomName::Ldmatrix { .. } | AtomName::MmaCPairAsA => 2,
                AtomName::MmaM16n8k16 { .. } | AtomName::MmaM8n8k4 | AtomName::LdmatrixForMmaA => 3,
                AtomName::VoltaMacro => 3,
                AtomName::WgmmaM64nNk16 { .. } => 1,
                AtomName::WgmmaShared { .. } => 0,
            };
            // The macro's A and B are held twice (two quad pairs share
            // each row of A and each column of B); C once.
            let copies = |title: &str| match name {
                AtomName::VoltaMacro if !title.contains(" C/D ") => 2,
                _ => 1,
            };
            assert_eq!(maps.len(), expected, "{name}");
            for map in &maps {
                for r in 0..map.rows() {
                    for c in 0..map.cols() {
                        assert_eq!(
                            map.owners(r, c).len(),
                            copies(map.title()),
                            "{name} {} ({r},{c})",
                            map.title()
                        );
                    }
                }
            }
        }
    }
}
