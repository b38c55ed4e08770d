//! `:help`: what each command does, with examples that work when typed as
//! shown (a test runs every example line). Also the list of `:atom` names.

use graphene::viz::AtomName;

use crate::algebra::FUNCTIONS;
use crate::command::{Arg, COMMANDS, usage};
use crate::failure::{Failure, codes, similar};

/// The overview: the kinds of input and the commands.
const OVERVIEW: &str = "\
graphene: type a layout, an IR statement, or a command.

  (4,8):(1,4)              a layout in CuTe notation, drawn
  [4,(2,4) : 2,(1,8)]      the same in the IR's bracket notation
  coalesce([2,(1,6) : 1,(6,2)])   the algebra as calls (:help algebra)
  let A = [4,8 : 1,4]      name a layout for later lines
  %A:[4,8 : 1,4].fp32.GL   IR: a tensor, a thread group, .tile, indexing (:help ir)
  { … }                    an unfinished block continues on the next line

commands:
";

/// Examples per command: the lines a user can type (each works in a fresh
/// session after the ones before it).
pub const EXAMPLES: [(&str, &[&str]); 12] = [
    (
        "show",
        &[
            "%A:[4,8 : 1,4].fp32.GL",
            ":show %A.tile([2:2],[4:1])",
            ":show %A.tile([2:2],[4:1]) blocks",
            "#warp:[32].thread",
            ":show #warp.tile(8).reshape(0, [2,2 : 2,1])",
            ":show (4,(2,4)):(2,(1,8))",
        ],
    ),
    (
        "atom",
        &[
            ":atom",
            ":atom ldmatrix.x4",
            ":atom mma.m16n8k16.bf16",
            ":atom mma.m8n8k4.macro",
            ":atom ldmatrix.x4 for mma.m16n8k16.A",
            ":atom wgmma.m64n128k16 B sw128",
            ":atom mma.m16n8k16 warps 2x2 repeat 2x4",
        ],
    ),
    (
        "map",
        &[
            "%S:[16,16 : 16,1].fp16.SH",
            "#t:[32].thread",
            "(@m, @n), @r = #t.tile(8).reshape(0, [2,2 : 2,1]).indices()",
            "%row = %S.tile([8,8])[@m, @n].tile([1,8])[@r, 0]",
            ":map %row by #t",
            ":map %row by #t zoom warp",
            ":map %row by #t zoom 8x8",
        ],
    ),
    (
        "banks",
        &[
            "%s:[8,64 : 64,1].fp16.SH",
            "#w:[32].thread",
            "@c, @r = #w.tile(8).indices()",
            ":banks %s",
            ":banks %s.tile([1,8])[@r, @c] by #w width 16",
        ],
    ),
    (
        "swizzle",
        &[
            ":swizzle 3 3 3",
            ":swizzle 3 3 3 (8,64):(64,1)",
            "%s:[8,64 : 64,1].fp16.SH",
            "#w:[32].thread",
            "@c, @r = #w.tile(8).indices()",
            ":swizzle 3 3 3 %s.tile([1,8])[@r, @c] by #w width 16",
        ],
    ),
    (
        "tma",
        &[
            "%A:[M, K : K, 1].fp16.GL",
            "%s:[128, 64 : 64, 1].fp16.SH.Swizzle<3, 3, 3>",
            "%g = %A.tile_partial([128, 64])[0, 0]",
            ":tma %s %g",
        ],
    ),
    ("save", &[":atom mma.m16n8k16.f16", ":save mma.svg"]),
    ("names", &["let A = (4,8):(1,4)", ":names"]),
    (
        "set",
        &[":set width 120", ":set color off", ":set colorby warp"],
    ),
    ("reset", &[":reset"]),
    ("help", &[":help", ":help map", ":help algebra"]),
    ("quit", &[":quit"]),
];

/// What the algebra topic says.
fn algebra_help() -> String {
    let mut out = String::from(
        "the layout language:\n\
         \x20 literals  (4,8):(1,4)  (4,8)  8:1  [4,8 : 1,4]  [4,8]   (no strides: column-major)\n\
         \x20 integers  24           where a layout is needed, n means n:1\n\
         \x20 names     let A = …    then A in any expression; constants (const BM = 16) too\n\
         \x20 tilers    <2:1, _>     one entry per mode; `_` keeps the mode; <2,4> is <2:1,4:1>\n\
         \x20 swizzles  Sw<3,3,3>   Sw<3,3,3> o (8,64):(64,1)   [8,64 : 64,1].Swizzle<3,3,3>\n\
         functions:\n",
    );
    let width = FUNCTIONS
        .iter()
        .map(|(name, args, _)| name.len() + args.len() + 2)
        .max()
        .unwrap_or(0);
    for (name, args, what) in FUNCTIONS {
        let call = format!("{name}({args})");
        out.push_str(&format!("  {call:<width$}  {what}\n"));
    }
    out.push_str(
        "examples:\n  complement(4:2, 24)\n  logical_divide([4,8], <2:2, 4:1>)\n  \
         composition(Sw<3,3,3> o (8,64):(64,1), (8,8):(64,1))\n",
    );
    out
}

/// What the IR topic says.
const IR_HELP: &str = "\
IR lines go through the checker (docs/language.md); names persist across lines.
  %A:[4,8 : 1,4].fp32.GL            a tensor: levels . scalar . memory (GL, SH, RF)
  %B = %A.tile([2:2],[4:1])         a view: tiles (outer level first)
  %A.tile([2:1],[4:1])              an expression alone is shown, not named
  #warp:[32].thread                 a thread group
  #g = #warp.tile(8).reshape(0, [2,2 : 2,1])
  (@m, @n), @i = #g.indices()       each thread's coordinates, over `tid`
  %T = %B[@m, @n]                   indexing: one tile per thread
  const BM = 16                     a constant
  kernel k { … }                    a whole kernel, checked on its own
";

/// `:help [topic]`.
pub fn help(topic: Option<&Arg>) -> Result<String, Failure> {
    let Some(topic) = topic else {
        let mut out = OVERVIEW.to_string();
        let width = COMMANDS
            .iter()
            .map(|(name, _, _)| usage(name).len())
            .max()
            .unwrap_or(0);
        for (name, _, what) in COMMANDS {
            out.push_str(&format!("  {:<width$}  {what}\n", usage(name)));
        }
        out.push_str(
            "\n:help COMMAND shows examples; :help algebra and :help ir the two languages\n",
        );
        return Ok(out);
    };
    let wanted = topic.text.trim_start_matches(':');
    match wanted {
        "algebra" => return Ok(algebra_help()),
        "ir" => return Ok(IR_HELP.to_string()),
        _ => {}
    }
    let Some((name, _, what)) = COMMANDS.iter().find(|(name, _, _)| *name == wanted) else {
        let known = COMMANDS.iter().map(|(n, _, _)| *n).chain(["algebra", "ir"]);
        let failure = Failure::new(
            codes::BAD_ARGUMENTS,
            format!("no help on `{wanted}`"),
            topic.span(),
        )
        .label("unknown topic");
        return Err(match similar(wanted, known).as_slice() {
            [] => failure.help("`:help` lists the commands"),
            found => failure.help(format!("did you mean `{}`?", found.join("` or `"))),
        });
    };
    let mut out = format!("{}\n  {what}\n", usage(name));
    out.push_str(details(name));
    if let Some((_, lines)) = EXAMPLES.iter().find(|(n, _)| n == name) {
        out.push_str("examples:\n");
        for line in *lines {
            out.push_str(&format!("  {line}\n"));
        }
    }
    Ok(out)
}

/// What a command's picture shows, beyond its one-line summary.
fn details(name: &str) -> &'static str {
    match name {
        "show" => {
            "  A layout: the offset of each coordinate (rows: mode 0, columns: the other modes).\n  \
             A tiled tensor: its tiles lettered inside the tensor they were cut from, with a\n  \
             legend; `blocks` draws them as separate blocks. A thread group: each cell a thread id.\n"
        }
        "atom" => {
            "  Cells read T4:v1: thread 4, its value 1. ldmatrix draws which thread gives each\n  \
             row's address, then which thread receives each value; mma draws A, B and C/D.\n  \
             `ldmatrix.x4 for mma.m16n8k16.A` follows shared memory → registers → operand.\n  \
             `wgmma.m64nNk16 A|B [none|sw32|sw64|sw128] [mn-major]`: the byte each element of\n  \
             the operand is read from in shared memory, and the matrix descriptor.\n  \
             `warps MxN` lays mma.m16n8k16 over an M×N grid of warps (warp w at (w%M, w/M)),\n  \
             `repeat MxN` repeats that tile (CuTe's TiledMMA): A left, B above, C in place,\n  \
             thread T = 32w + lane.\n"
        }
        "map" => {
            "  The view's offset is evaluated for every thread of #G; value vE is element E of\n  \
             the thread's view (element order). Drawn on the grid of the view's buffer, then\n  \
             thread by thread. `zoom warp` draws each element's warp (W0, W1, …) instead, for\n  \
             tiles of up to 2^20 elements (thread cells stop at 4096); `zoom 16x16` draws a\n  \
             cell per 16×16 tile, naming the warps that own it (W0+1: warp 0 and one more).\n"
        }
        "banks" => {
            "  Without `by`: the bank of each element. With `by`: each thread reads its view\n  \
             `width` bytes at a time (default: one element); per phase of the warp, how many\n  \
             distinct words each of the 32 banks serves, and the conflict degree.\n"
        }
        "swizzle" => {
            "  Alone, explains Swizzle<B,M,S>: the bits it XORs, the chunk c of row r it moves to\n  \
             c XOR r, and a column of chunks read one per row (as ldmatrix reads) before and after.\n  \
             With X, stores X's buffer with it: the permuted grid, then its banks, or with\n  \
             `by` the warp's access before and after.\n"
        }
        "save" => {
            "  Draws the last picture again in colour, whole (captions wrapped at 400 columns),\n  \
             and writes it as SVG: the same characters, each coloured run on a tinted box.\n"
        }
        "set" => {
            "  Grids wider than the width wrap into panels of columns (`columns A-B (of N):`);\n  \
             grids taller than the height are cut with `… N more rows`.\n  \
             `:set colorby block|thread|warp|quad|value`: what the colours of the cells of :map\n  \
             and :atom tell apart (default block; the text is the same).\n"
        }
        _ => "",
    }
}

/// `:atom` alone: the names.
pub fn atoms() -> String {
    let mut out = String::from("atoms (`:atom NAME`):\n");
    for name in AtomName::all() {
        out.push_str(&format!("  {name}\n"));
    }
    out.push_str(
        "wgmma.m64nNk16 takes every N from 8 to 256 in steps of 8; after it, A or B and\n\
         optionally none, sw32, sw64 or sw128 (the default) and mn-major draw that operand\n\
         in shared memory with its matrix descriptor.\n",
    );
    out
}
