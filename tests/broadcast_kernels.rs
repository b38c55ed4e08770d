//! Broadcast views end to end: `y = x op v` over a matrix of M rows of N
//! elements (element `(n, m)` at `n + N·m`, so a row is contiguous), where
//! `v` is a bias row `v[N]` repeated over the rows (`%v.broadcast(1, M)`)
//! or a value per row `v[M]` repeated along each row (`%v.broadcast(0, N)`).
//! Each thread takes a few columns of two rows, so its piece of `v` is a
//! per-thread broadcast view. The kernels are compiled, their PTX read for
//! the one load of `v` per thread, assembled by ptxas, and run on the CPU
//! executor of the PTX for several shapes; the outputs are compared with
//! values computed here, bit for bit, and the CPU reference of the
//! contract (whose second operand is the broadcast view itself) agrees.

mod ptx_support;
mod support;

use graphene::compile::{Compiled, Options, compile};
use graphene::exec::{self, Arg};
use graphene::launch::{DimArg, run_kernel_cpu, select};
use graphene::ptx::Arch;
use half::f16;

/// Which vector is repeated, and how.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Vector {
    /// `v[N]`, the same for every row: read by the pointwise spec itself.
    Bias,
    /// `v[M]`, one value per row: moved into registers first.
    PerRow,
}

/// One kernel: element type, operator, vector.
#[derive(Clone, Copy, Debug)]
struct Case {
    scalar: &'static str,
    op: &'static str,
    vector: Vector,
}

impl Case {
    /// Elements per thread and row: 16 bytes.
    fn width(self) -> usize {
        if self.scalar == "fp32" { 4 } else { 8 }
    }

    /// Columns per block: 64 threads side by side.
    fn columns(self) -> usize {
        64 * self.width()
    }

    fn name(self) -> String {
        format!("{}_{:?}_{}", self.op, self.vector, self.scalar).to_lowercase()
    }

    fn source(self) -> String {
        let (s, w, cols) = (self.scalar, self.width(), self.columns());
        let (length, repeated) = match self.vector {
            Vector::Bias => ("N", "%v.broadcast(1, M)"),
            Vector::PerRow => ("M", "%v.broadcast(0, N)"),
        };
        let op = self.op;
        let piece = format!(".tile([{cols}, 2])[@bn, @bm].tile([{w}, 2])[@c, 0]");
        let combine = match self.vector {
            Vector::Bias => {
                format!("%acc <- BinaryPointwise<{op}><<<#one, #me>>>(%acc, %vp)")
            }
            Vector::PerRow => format!(
                "%vr:[{w}, 2].{s}.RF\n        %vr <- Move<<<#one, #me>>>(%vp)\n        \
                 %acc <- BinaryPointwise<{op}><<<#one, #me>>>(%acc, %vr)"
            ),
        };
        format!(
            "kernel {name} {{
    %x:[N, M].{s}.GL
    %v:[{length}].{s}.GL
    %y:[N, M].{s}.GL
    #g:[N/{cols}, M/2].block
    #t:[64].thread
    %y <- BinaryPointwise<{op}><<<#g, #t>>>(%x, {repeated}) {{
        @bn, @bm = #g.indices()
        @c = #t.indices()
        #one:[].block = #g.scalar()
        #me:[].thread = #t.scalar()
        %xp = %x{piece}
        %yp = %y{piece}
        %vp = {repeated}{piece}
        %acc:[{w}, 2].{s}.RF
        for (r = 0; r < 2; r += 1) {{
            %acc[_, r] <- Move<<<#one, #me>>>(%xp[_, r])
        }}
        {combine}
        for (r = 0; r < 2; r += 1) {{
            %yp[_, r] <- Move<<<#one, #me>>>(%acc[_, r])
        }}
    }}
}}
",
            name = self.name()
        )
    }

    fn compiled(self) -> Compiled {
        let source = self.source();
        compile(
            &format!("{}.gph", self.name()),
            &source,
            &Options::default(),
        )
        .unwrap_or_else(|d| panic!("{self:?}: {d:#?}\n{source}"))
    }

    /// `a op b` as the kernel computes it on two elements given as f64
    /// (values every type holds exactly), as bits of the element type.
    fn expected(self, a: f64, b: f64) -> u32 {
        let in_f32 = |a: f32, b: f32| match self.op {
            "add" => a + b,
            "sub" => a - b,
            "div" => a / b,
            other => panic!("no operator {other}"),
        };
        match self.scalar {
            "fp32" => in_f32(a as f32, b as f32).to_bits(),
            // add.f16x2 and sub.f16x2 round the exact result once; `div`
            // has no packed form and goes through fp32, rounded to fp16.
            _ => match self.op {
                "div" => u32::from(f16::from_f32(in_f32(a as f32, b as f32)).to_bits()),
                _ => {
                    u32::from(f16::from_f64(if self.op == "add" { a + b } else { a - b }).to_bits())
                }
            },
        }
    }

    fn bytes(self, values: &[f64]) -> Vec<u8> {
        match self.scalar {
            "fp32" => values
                .iter()
                .flat_map(|v| (*v as f32).to_le_bytes())
                .collect(),
            _ => values
                .iter()
                .flat_map(|v| f16::from_f64(*v).to_le_bytes())
                .collect(),
        }
    }

    fn bits(self, bytes: &[u8]) -> Vec<u32> {
        match self.scalar {
            "fp32" => bytes
                .chunks(4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            _ => bytes
                .chunks(2)
                .map(|b| u32::from(u16::from_le_bytes([b[0], b[1]])))
                .collect(),
        }
    }
}

const CASES: [Case; 5] = [
    Case {
        scalar: "fp32",
        op: "add",
        vector: Vector::Bias,
    },
    Case {
        scalar: "fp16",
        op: "add",
        vector: Vector::Bias,
    },
    Case {
        scalar: "fp32",
        op: "sub",
        vector: Vector::PerRow,
    },
    Case {
        scalar: "fp16",
        op: "sub",
        vector: Vector::PerRow,
    },
    Case {
        scalar: "fp16",
        op: "div",
        vector: Vector::Bias,
    },
];

/// Multiples of 1/8 between −6 and 6.5: exact in fp16 and fp32.
fn matrix_value(i: usize) -> f64 {
    ((i * 37 + 11) % 101) as f64 / 8.0 - 6.0
}

/// Multiples of 1/4 minus 1/8, never 0: a divisor.
fn vector_value(j: usize) -> f64 {
    ((j * 13 + 5) % 29) as f64 / 4.0 - 3.125
}

#[test]
fn each_thread_loads_its_piece_of_the_vector_once() {
    for case in CASES {
        let text = case.compiled().text;
        let loads = text.matches("ld.global.").count();
        // Two rows of x, one load of the vector reused for both rows.
        assert_eq!(loads, 3, "{case:?}:\n{text}");
        let packs: Vec<&str> = text
            .lines()
            .filter(|line| line.trim_start().starts_with("mov.b32 %r") && line.contains('{'))
            .collect();
        let unpacks = text.matches("mov.b32 {").count();
        match (case.vector, case.scalar) {
            // Through fp32, element by element: the bias's four words are
            // unpacked once for both rows (and the rows' eight words), the
            // results packed back.
            (Vector::Bias, "fp16") if case.op == "div" => {
                assert_eq!(unpacks, 4 + 8, "{case:?}:\n{text}");
            }
            // The bias row's words are the pairs the rows need: no packing.
            (Vector::Bias, _) | (Vector::PerRow, "fp32") => {
                assert!(packs.is_empty(), "{case:?}: {packs:?}\n{text}");
            }
            // The two rows' values, each packed with itself once.
            (Vector::PerRow, _) => {
                assert_eq!(packs.len(), 2, "{case:?}: {packs:?}\n{text}");
                for pack in packs {
                    let inside = pack.split('{').nth(1).expect("a pair");
                    let halves: Vec<&str> = inside
                        .trim_end_matches(['}', ';'])
                        .split(", ")
                        .collect();
                    assert_eq!(halves[0], halves[1], "{pack}");
                }
            }
        }
    }
}

#[test]
fn the_kernels_assemble() {
    if !ptx_support::tools_available() {
        return;
    }
    for case in CASES {
        let module = case.compiled().module.expect("PTX was asked for");
        for arch in [Arch::Sm70, Arch::Sm90] {
            ptx_support::check_module(&module, arch, &[]);
        }
    }
}

#[test]
fn the_executor_computes_what_the_broadcast_means() {
    for case in CASES {
        let compiled = case.compiled();
        for (blocks_n, m) in [(1, 2), (2, 6), (3, 4)] {
            let n = blocks_n * case.columns();
            let length = match case.vector {
                Vector::Bias => n,
                Vector::PerRow => m,
            };
            let x: Vec<f64> = (0..n * m).map(matrix_value).collect();
            let v: Vec<f64> = (0..length).map(vector_value).collect();
            let args = [
                Arg::Buffer(case.bytes(&x)),
                Arg::Buffer(case.bytes(&v)),
                Arg::Buffer(vec![
                    0xff;
                    n * m * (if case.scalar == "fp32" { 4 } else { 2 })
                ]),
                Arg::U32(n as u32),
                Arg::U32(m as u32),
            ];
            let grid = (blocks_n * m / 2) as u32;
            let run = exec::run_kernel(&compiled.text, &case.name(), grid, 64, 0, &args)
                .unwrap_or_else(|e| panic!("{case:?} N={n} M={m}: {e}"));
            assert!(run.findings.is_empty(), "{case:?}: {:#?}", run.findings);
            let y = case.bits(&run.outputs[2]);
            for row in 0..m {
                for column in 0..n {
                    let at = column + n * row;
                    let repeated = match case.vector {
                        Vector::Bias => v[column],
                        Vector::PerRow => v[row],
                    };
                    assert_eq!(
                        y[at],
                        case.expected(x[at], repeated),
                        "{case:?} N={n} M={m}: y[{column}, {row}]"
                    );
                }
            }
        }
    }
}

#[test]
fn the_reference_of_the_contract_reads_the_broadcast_operand() {
    for case in CASES {
        let compiled = case.compiled();
        let n = 2 * case.columns();
        let dims = [
            DimArg {
                name: "N".into(),
                value: n as u32,
            },
            DimArg {
                name: "M".into(),
                value: 4,
            },
        ];
        let chosen = select(&compiled, None, &dims).expect("selects");
        let run = run_kernel_cpu(
            &compiled.text,
            &chosen[0].plan,
            &chosen[0].contract,
            7,
            true,
        )
        .expect("runs");
        assert!(run.passed(), "{case:?}: {}", run.line());
    }
}
