//! Instruction atoms: which thread holds which element of each operand of
//! the warp-collective instructions — `ldmatrix` (`.x1/.x2/.x4`, `.trans`),
//! `mma.m16n8k16` (f16 and bf16 inputs), Volta's `mma.m8n8k4` (quad pairs,
//! and the 16×16×8 macro-MMA built of them, `volta_macro`) and Hopper's
//! `wgmma.m64nNk16` (its accumulators; its shared-memory operands and their
//! descriptors, `wgmma_shared`) — written once, as CuTe thread–value layouts. Instruction selection reads the per-thread
//! fragment shapes from here, the REPL's `:atom` draws these maps, and the
//! tests check each against the PTX ISA's formulas (docs/atoms.md).
//!
//! Convention: an operand is a `rows × cols` matrix of elements, numbered
//! column-major (`row + rows·col`). Its layout `tv` has rank 2: mode 0 is
//! the thread within the atom, mode 1 the value (the element index `e` of
//! the fragment, low half of a packed register first), each read
//! colexicographically; `tv(thread, value)` is the element's number. A is
//! `m × k`, B is `k × n` (not CuTe's `n × k`), C/D is `m × n`.
//!
//! The top-level modes of the value mode are the fragment's levels,
//! innermost first: [`Fragment::levels`] reads the per-thread register
//! shape the lowering asks of a spec's operand off them.

use crate::layout::Layout;

mod volta_macro;
mod wgmma_shared;

pub use volta_macro::{MacroElement, MacroMma, volta_macro_m16n16k8};
pub use wgmma_shared::{ELEMENT_BYTES, Major, MatrixDescriptor, SharedSwizzle};

/// One operand of an atom: its matrix and which thread holds which element.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fragment {
    /// The rows of the operand's matrix.
    pub rows: i64,
    /// Its columns.
    pub cols: i64,
    /// The width of one element in bits.
    pub bits: u32,
    /// `(thread, value) → row + rows·col`.
    pub tv: Layout,
}

impl Fragment {
    /// The fragment of a `rows × cols` matrix of `bits`-bit elements whose
    /// thread–value layout is `tv`, written in CuTe's `shape:stride` text.
    fn new(rows: i64, cols: i64, bits: u32, tv: &str) -> Fragment {
        let tv = tv
            .parse()
            .unwrap_or_else(|error| panic!("the atom layout `{tv}` is malformed: {error}"));
        Fragment {
            rows,
            cols,
            bits,
            tv,
        }
    }

    /// The thread mode: thread → the element number of its value 0.
    pub fn thread_mode(&self) -> Layout {
        self.mode(0)
    }

    /// The value mode: value → element number, relative to value 0.
    pub fn value_mode(&self) -> Layout {
        self.mode(1)
    }

    fn mode(&self, i: usize) -> Layout {
        self.tv
            .mode(i)
            .unwrap_or_else(|error| panic!("the atom layout {} has rank 2: {error}", self.tv))
    }

    /// How many threads hold elements.
    pub fn threads(&self) -> i64 {
        self.thread_mode().size()
    }

    /// How many values each thread holds.
    pub fn values(&self) -> i64 {
        self.value_mode().size()
    }

    /// The `(row, col)` of the element `thread` holds as `value`.
    pub fn element(&self, thread: i64, value: i64) -> (i64, i64) {
        let offset = self.thread_mode().eval(thread).unwrap_or_else(|error| {
            panic!("thread {thread} is outside {}: {error}", self.thread_mode())
        }) + self.value_mode().eval(value).unwrap_or_else(|error| {
            panic!("value {value} is outside {}: {error}", self.value_mode())
        });
        (offset % self.rows, offset / self.rows)
    }

    /// Every `(thread, value, row, col)` of the fragment, value-major.
    pub fn elements(&self) -> impl Iterator<Item = (i64, i64, i64, i64)> + '_ {
        let (threads, values) = (self.threads(), self.values());
        (0..values).flat_map(move |value| {
            (0..threads).map(move |thread| {
                let (row, col) = self.element(thread, value);
                (thread, value, row, col)
            })
        })
    }

    /// The per-thread register shape, one `[rows, cols]` per level,
    /// outermost first: the extents along the matrix's rows and columns
    /// that each top-level mode of the value mode walks. The C of
    /// `mma.m16n8k16`, values `(2,2):(16,8)`, is `[2,1].[1,2]`: an n-pair
    /// inside an m-half.
    pub fn levels(&self) -> Vec<Vec<i64>> {
        let mut levels: Vec<Vec<i64>> = self
            .value_mode()
            .modes()
            .iter()
            .map(|level| {
                let mut rows: Vec<i64> = level.offsets().map(|o| o % self.rows).collect();
                let mut cols: Vec<i64> = level.offsets().map(|o| o / self.rows).collect();
                for axis in [&mut rows, &mut cols] {
                    axis.sort_unstable();
                    axis.dedup();
                }
                vec![rows.len() as i64, cols.len() as i64]
            })
            .collect();
        levels.reverse();
        levels
    }
}

/// How many 8×8 matrices one `ldmatrix` loads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LdmatrixCount {
    /// `.x1`: one matrix, addresses from threads 0–7.
    X1,
    /// `.x2`: two matrices, addresses from threads 0–15.
    X2,
    /// `.x4`: four matrices, addresses from all 32 threads.
    X4,
}

impl LdmatrixCount {
    /// The number of matrices (1, 2 or 4).
    pub fn matrices(self) -> usize {
        match self {
            LdmatrixCount::X1 => 1,
            LdmatrixCount::X2 => 2,
            LdmatrixCount::X4 => 4,
        }
    }
}

/// `ldmatrix.sync.aligned.m8n8.{x1,x2,x4}[.trans].shared.b16`: its
/// matrices side by side, matrix `j` at block `(j / 2, j % 2)` of 8×8
/// blocks (`.x1` 8×8, `.x2` 8×16, `.x4` 16×16).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ldmatrix {
    /// Which thread gives which row's address: thread `8j + r`, value `c`
    /// is element `c` of row `r` of matrix `j`.
    pub addresses: Fragment,
    /// What each thread receives: value `2j + h` is half `h` of register
    /// `d[j]`.
    pub values: Fragment,
}

/// The `ldmatrix` atom of `count` matrices, transposed or not.
pub fn ldmatrix(count: LdmatrixCount, trans: bool) -> Ldmatrix {
    // Thread mode (t, g) with lane = t + 4g: without `.trans` g picks the
    // row and t the column pair; with it the other way round.
    let (rows, cols, addresses, values) = match (count, trans) {
        (LdmatrixCount::X1, false) => (8, 8, "(8,8):(1,8)", "((4,8),2):((16,1),8)"),
        (LdmatrixCount::X1, true) => (8, 8, "(8,8):(1,8)", "((4,8),2):((2,8),1)"),
        (LdmatrixCount::X2, false) => (
            8,
            16,
            "((8,2),8):((1,64),8)",
            "((4,8),(2,2)):((16,1),(8,64))",
        ),
        (LdmatrixCount::X2, true) => (
            8,
            16,
            "((8,2),8):((1,64),8)",
            "((4,8),(2,2)):((2,8),(1,64))",
        ),
        (LdmatrixCount::X4, false) => (
            16,
            16,
            "((8,(2,2)),8):((1,(128,8)),16)",
            "((4,8),(2,(2,2))):((32,1),(16,(128,8)))",
        ),
        (LdmatrixCount::X4, true) => (
            16,
            16,
            "((8,(2,2)),8):((1,(128,8)),16)",
            "((4,8),(2,(2,2))):((2,16),(1,(128,8)))",
        ),
    };
    Ldmatrix {
        addresses: Fragment::new(rows, cols, 16, addresses),
        values: Fragment::new(rows, cols, 16, values),
    }
}

/// A warp-collective multiply `D (m×n) = A (m×k) · B (k×n) + C`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mma {
    /// `(m, n, k)`.
    pub shape: (i64, i64, i64),
    /// The atom's threads as lanes of the warp (or threads of the
    /// warpgroup): atom thread `i` is lane `lanes(i)`.
    pub lanes: Layout,
    /// Where the warp's instances of the atom start: instance `q` is the
    /// atom whose thread `i` is lane `instances(q) + lanes(i)`.
    pub instances: Layout,
    /// A, `m × k`.
    pub a: Fragment,
    /// B, `k × n`.
    pub b: Fragment,
    /// C and D, `m × n`, fp32.
    pub c: Fragment,
}

impl Mma {
    /// Whether the accumulators of two column-adjacent instances are the A
    /// fragment of the next multiply ([`c_pair_is_a`] on this atom's C and
    /// A; for `mma.m16n8k16`: yes).
    pub fn c_pair_is_a(&self) -> Result<(), CAsAMismatch> {
        c_pair_is_a(&self.c, &self.a)
    }
}

/// Whether two column-adjacent accumulator tiles `c` (`m × n` each) — read
/// in element order, the left tile's values, then the right's — hold
/// exactly the elements the A fragment `a` of an `m × 2n` operand holds:
/// for every thread and value, the same row and column. This is what lets
/// attention feed the scores of one multiply, rounded to 16 bits in their
/// own registers, to the next multiply as its A. `Err` names the first
/// thread and value where they differ, with both elements.
pub fn c_pair_is_a(c: &Fragment, a: &Fragment) -> Result<(), CAsAMismatch> {
    let shapes = CAsAMismatch::Shape {
        c: (c.rows, 2 * c.cols),
        a: (a.rows, a.cols),
    };
    if (c.rows, 2 * c.cols) != (a.rows, a.cols)
        || a.values() != 2 * c.values()
        || a.threads() != c.threads()
    {
        return Err(shapes);
    }
    let c_values = c.values();
    for thread in 0..a.threads() {
        for value in 0..a.values() {
            let (row, col) = c.element(thread, value % c_values);
            let from_c = (row, col + c.cols * (value / c_values));
            let from_a = a.element(thread, value);
            if from_c != from_a {
                return Err(CAsAMismatch::Element {
                    thread,
                    value,
                    c: from_c,
                    a: from_a,
                });
            }
        }
    }
    Ok(())
}

/// Why two column-adjacent C fragments are not an A fragment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CAsAMismatch {
    /// The matrices differ: two C tiles side by side are `c`, A is `a` (rows, cols).
    Shape {
        /// Rows and columns of the two C tiles.
        c: (i64, i64),
        /// Rows and columns of A.
        a: (i64, i64),
    },
    /// Thread `thread`'s value `value` is element `c` (row, col) as C and `a` as A.
    Element {
        /// The thread.
        thread: i64,
        /// The value (register element) index.
        value: i64,
        /// Its element read as the C fragments.
        c: (i64, i64),
        /// Its element read as the A fragment.
        a: (i64, i64),
    },
}

impl std::fmt::Display for CAsAMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CAsAMismatch::Shape { c, a } => write!(
                f,
                "two C tiles side by side are {}×{}, A is {}×{}",
                c.0, c.1, a.0, a.1
            ),
            CAsAMismatch::Element {
                thread,
                value,
                c,
                a,
            } => write!(
                f,
                "thread {thread} value {value} is ({}, {}) as C but ({}, {}) as A",
                c.0, c.1, a.0, a.1
            ),
        }
    }
}

fn layout(text: &str) -> Layout {
    text.parse()
        .unwrap_or_else(|error| panic!("the atom layout `{text}` is malformed: {error}"))
}

/// `mma.sync.aligned.m16n8k16.row.col` with 16-bit inputs (f16 and bf16
/// hold the same elements). Thread mode `(t, g)`, lane = `t + 4g`.
pub fn mma_m16n8k16() -> Mma {
    Mma {
        shape: (16, 8, 16),
        lanes: layout("32:1"),
        instances: layout("1:0"),
        a: Fragment::new(16, 16, 16, "((4,8),(2,(2,2))):((32,1),(16,(8,128)))"),
        b: Fragment::new(16, 8, 16, "((4,8),(2,2)):((2,16),(1,8))"),
        c: Fragment::new(16, 8, 32, "((4,8),(2,2)):((32,1),(16,8))"),
    }
}

/// `mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32` (Volta): four
/// independent products per warp, one per quad pair. Atom thread `i` is
/// `t + 4h` — lane `4q + t + 16h` of quad pair `q`.
pub fn mma_m8n8k4() -> Mma {
    Mma {
        shape: (8, 8, 4),
        lanes: layout("(4,2):(1,16)"),
        instances: layout("4:4"),
        a: Fragment::new(8, 4, 16, "(8,4):(1,8)"),
        b: Fragment::new(4, 8, 16, "(8,4):(4,1)"),
        c: Fragment::new(8, 8, 32, "((2,2,2),(2,(2,2))):((1,16,4),(8,(2,32)))"),
    }
}

/// The A of `wgmma.mma_async.sync.aligned.m64nNk16` read from registers
/// (64×16, 16-bit): warp `w` of the warpgroup holds rows `16w..16w+15` as
/// the `mma.m16n8k16` A fragment, thread `t + 4g + 32w` four registers
/// `a0..a3` of two halves.
pub fn wgmma_m64nnk16_a_registers() -> Fragment {
    Fragment::new(64, 16, 16, "((4,8,4),(2,(2,2))):((128,1,16),(64,(8,512)))")
}

/// The accumulators of `wgmma.mma_async.sync.aligned.m64nNk16.f32` for a B
/// of `n` columns (a multiple of 8): thread `t + 4g + 32w` of the
/// warpgroup holds rows `16w + g` and `16w + g + 8` as the `mma.m16n8` C,
/// repeated `n / 8` times along N. A and B are read from shared memory
/// through descriptors; no thread holds their elements.
pub fn wgmma_m64nnk16_accumulators(n: i64) -> Fragment {
    Fragment::new(
        64,
        n,
        32,
        &format!("((4,8,4),(2,2,{})):((128,1,16),(64,8,512))", n / 8),
    )
}

#[cfg(test)]
mod tests;
