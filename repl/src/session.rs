//! The evaluator: one [`Session`] holds the names (the checker's IR names,
//! the `let` layouts, the constants) and the drawing style, and
//! [`Session::eval_line`] turns one input into an [`Output`]. No terminal
//! here: the binary and the tests drive the same function.
//!
//! An input is, by its first word: a command (`:show …`), a `let`, IR (it
//! starts with `const`, `kernel`, `for`, `if`, `sync`, `async_commit`,
//! `async_wait`, `mma_commit` or `mma_wait`, or mentions a `%tensor`, `#group` or `@index`), or else a
//! layout expression.

use std::collections::BTreeMap;

use graphene::check::{self, Shown, expr_text, group_type_text, tensor_type_text};
use graphene::compile;
use graphene::diag::{ColorChoice, SourceMap};
use graphene::syntax::{self, Line, MAX_NESTING, print_expr, token::too_deep, tokenize};
use graphene::viz::{AtomName, ColorBy, Style, TiledMma, atom_colored_by, tiled_mma};

use crate::algebra::{self, Scope, Value};
use crate::command::{self, Arg, Command, Grid};
use crate::failure::{Failure, codes, span};
use crate::help;
use crate::pictures::{self, Context, mentions_ir_names, view_line};
use crate::threads;
use crate::tma;

/// The width and height a saved picture is drawn with: room for every
/// column and row of the grids drawn whole (a tiled MMA of 256 columns of
/// `T255:v127` needs 2,800 characters); captions wrap at 400 characters
/// whatever the width (`viz::Style`).
pub const SAVED_WIDTH: usize = 100_000;
/// See [`SAVED_WIDTH`].
pub const SAVED_HEIGHT: usize = 4096;

/// The IR's statement keywords: a line starting with one is IR.
pub use graphene::syntax::KEYWORDS as IR_KEYWORDS;

/// What one input produced.
///
/// Rule: `errors` holds rendered diagnostics (for standard error), `text`
/// everything else (for standard output); `failed` is set exactly when
/// `errors` is not empty; after a failure the session is as it was before.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Output {
    /// The result and its drawings.
    pub text: String,
    /// Rendered diagnostics.
    pub errors: String,
    /// The input was rejected.
    pub failed: bool,
    /// The input asked to leave.
    pub quit: bool,
}

/// Where an input comes from, for diagnostics: `name:line:column`.
#[derive(Clone, Copy, Debug)]
pub struct Origin<'a> {
    /// The file name, or `<input>`.
    pub name: &'a str,
    /// The line the input starts at (1-based).
    pub line: usize,
}

/// A REPL session: its names and its style.
///
/// Rule: a failed input changes nothing (the checker's session is
/// transactional; `let` and commands change state only on success).
#[derive(Clone, Debug)]
pub struct Session {
    checker: check::Session,
    bound: BTreeMap<String, Value>,
    constants: BTreeMap<String, i64>,
    style: Style,
    /// What the colours of thread-data maps and atoms tell apart.
    color_by: ColorBy,
    /// The last input that drew a picture (a drawing command or a layout
    /// expression), which `:save` draws again.
    last_picture: Option<String>,
}

/// What an input asks the driver to do besides printing.
enum Reply {
    Text(String),
    Quit,
}

impl Session {
    /// An empty session drawing with `style`.
    pub fn new(style: Style) -> Session {
        Session {
            checker: check::Session::new(),
            bound: BTreeMap::new(),
            constants: BTreeMap::new(),
            style,
            color_by: ColorBy::default(),
            last_picture: None,
        }
    }

    /// How grids are drawn.
    pub fn style(&self) -> Style {
        self.style
    }

    /// Evaluates one input (possibly several lines of a `{ … }` block),
    /// reporting diagnostics against `<input>`.
    pub fn eval_line(&mut self, input: &str) -> Output {
        self.eval_at(
            input,
            Origin {
                name: "<input>",
                line: 1,
            },
        )
    }

    /// Evaluates one input that starts at `origin` (diagnostics say
    /// `origin.name:line:column`).
    pub fn eval_at(&mut self, input: &str, origin: Origin) -> Output {
        match self.run(input) {
            Ok(Reply::Text(text)) => Output {
                text,
                ..Output::default()
            },
            Ok(Reply::Quit) => Output {
                quit: true,
                ..Output::default()
            },
            Err(Failure(diagnostics)) => {
                // Blank lines before the input put it at its line number.
                let padding = origin.line.saturating_sub(1);
                let mut map = SourceMap::new();
                let id = map.add(origin.name, format!("{}{input}", "\n".repeat(padding)));
                let moved: Vec<_> = diagnostics
                    .into_iter()
                    .map(|d| crate::failure::shift(d, padding as u32))
                    .collect();
                let color = if self.style.color {
                    ColorChoice::Always
                } else {
                    ColorChoice::Never
                };
                Output {
                    errors: map.render(id, &moved, color),
                    failed: true,
                    ..Output::default()
                }
            }
        }
    }

    /// Every name a user may type next: `%x`, `#g`, `@i`, `let` names and
    /// constants, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut names = self.checker.defined();
        names.extend(self.bound.keys().cloned());
        names.extend(self.constants.keys().cloned());
        names.sort();
        names
    }

    fn context(&self) -> Context<'_> {
        Context {
            checker: &self.checker,
            scope: Scope {
                bound: &self.bound,
                constants: &self.constants,
            },
            style: self.style,
            color_by: self.color_by,
        }
    }

    fn run(&mut self, input: &str) -> Result<Reply, Failure> {
        let tokens = tokenize(input);
        let Some(first) = tokens.first() else {
            return Ok(Reply::Text(String::new()));
        };
        if let Some(deep) = too_deep(input, &tokens, MAX_NESTING) {
            return Err(Failure::new(
                syntax::codes::TOO_DEEP,
                "delimiters nested too deeply",
                deep,
            )
            .label(format!(
                "more than {MAX_NESTING} levels of `{{`, `(` and `[` here"
            )));
        }
        let first_word = first.text(input);
        if first_word == ":" {
            return self.command(input);
        }
        if first_word == "let" {
            return self
                .let_binding(input, first.span.end as usize)
                .map(Reply::Text);
        }
        if IR_KEYWORDS.contains(&first_word) || mentions_ir_names(input) {
            return self.ir(input).map(Reply::Text);
        }
        let text = without_comment(input);
        let value = algebra::evaluate(text, 0, &self.context().scope)?;
        let arg = Arg {
            text: text.trim().to_string(),
            start: 0,
        };
        let drawn = pictures::value_text(&value, &self.style, &arg)?;
        self.last_picture = Some(input.to_string());
        Ok(Reply::Text(drawn))
    }

    /// `:save FILE.svg`: the last picture drawn again, in colour and with
    /// room for every row and column (drawings past `viz::MAX_CELLS` stay
    /// summaries), written as SVG.
    fn save(&mut self, file: &Arg) -> Result<String, Failure> {
        if !file.text.ends_with(".svg") {
            return Err(Failure::new(
                codes::BAD_ARGUMENTS,
                format!("`{}` is not an .svg file", file.text),
                file.span(),
            )
            .label("the name must end in `.svg`")
            .help("e.g. `:save tile.svg`"));
        }
        let Some(input) = self.last_picture.clone() else {
            return Err(Failure::new(
                codes::BAD_ARGUMENTS,
                "nothing has been drawn yet",
                file.span(),
            )
            .label("no picture to save")
            .help("draw something first, e.g. `:atom mma.m16n8k16.f16`, then `:save mma.svg`"));
        };
        let shown = self.style;
        self.style = Style {
            color: true,
            width: SAVED_WIDTH,
            height: SAVED_HEIGHT,
        };
        let drawn = self.run(&input);
        self.style = shown;
        let Reply::Text(text) = drawn? else {
            return Ok(String::new());
        };
        let picture = graphene::viz::svg(&text);
        std::fs::write(&file.text, &picture).map_err(|error| {
            Failure::new(
                codes::BAD_ARGUMENTS,
                format!("cannot write `{}`: {error}", file.text),
                file.span(),
            )
            .label("not written")
        })?;
        Ok(format!(
            "saved `{}` as {} ({} lines, {} bytes)\n",
            input.trim(),
            file.text,
            text.lines().count(),
            picture.len()
        ))
    }

    /// `let NAME = expression`.
    fn let_binding(&mut self, input: &str, after_let: usize) -> Result<String, Failure> {
        let rest = without_comment(&input[after_let..]);
        let trimmed = rest.trim_start();
        let name_start = after_let + rest.len() - trimmed.len();
        let name_len = trimmed
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(trimmed.len());
        let name = &trimmed[..name_len];
        let usage = "write `let NAME = layout`, e.g. `let A = (4,8):(1,4)`";
        if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(Failure::new(
                codes::LAYOUT_SYNTAX,
                "expected a name after `let`",
                span(name_start, name_len),
            )
            .label("expected a name")
            .help(usage));
        }
        let name_span = span(name_start, name_len);
        let after_name = &trimmed[name_len..];
        let Some(value_text) = after_name.trim_start().strip_prefix('=') else {
            return Err(Failure::new(
                codes::LAYOUT_SYNTAX,
                "expected `=` after the name",
                span(name_start + name_len, 0),
            )
            .label("expected `=`")
            .help(usage));
        };
        if algebra::is_reserved(name) || IR_KEYWORDS.contains(&name) {
            return Err(Failure::new(
                codes::BAD_NAME,
                format!("`{name}` is a reserved word"),
                name_span,
            )
            .label("cannot be bound")
            .help("choose another name"));
        }
        if self.checker.const_value(name).is_some() {
            return Err(Failure::new(
                codes::BAD_NAME,
                format!("`{name}` is already a constant"),
                name_span,
            )
            .label("defined by `const`")
            .help("constants and layouts share names; choose another"));
        }
        // `value_text` is a slice of `input`: its offset is where it starts.
        let value_start = value_text.as_ptr() as usize - input.as_ptr() as usize;
        let value = algebra::evaluate(value_text, value_start, &self.context().scope)?;
        let arg = Arg {
            text: value_text.trim().to_string(),
            start: value_start,
        };
        let text = pictures::value_text(&value, &self.style, &arg)?;
        self.bound.insert(name.to_string(), value);
        // The name goes on the type line: `A : layout [4,8 : 1,4]…`.
        let (first, rest) = text.split_once('\n').unwrap_or((&text, ""));
        Ok(format!("{first}\n{name} : {rest}"))
    }

    /// IR through the checker's session.
    fn ir(&mut self, input: &str) -> Result<String, Failure> {
        let bound = &self.bound;
        let (line, shown) = compile::check_line(&mut self.checker, input, |line| match line {
            Line::Const(def) if bound.contains_key(&def.name.text) => Err(Failure::new(
                codes::BAD_NAME,
                format!("`{}` is already a layout", def.name.text),
                def.name.span,
            )
            .label("bound by `let`")
            .help("constants and layouts share names; choose another")),
            Line::Empty | Line::Const(_) | Line::Kernel(_) | Line::Stmt(_) | Line::Expr(_) => {
                Ok(())
            }
        })?;
        if let Shown::Const { name, value } = &shown {
            self.constants.insert(name.clone(), *value);
        }
        Ok(self.shown_text(&shown, &line))
    }

    /// What a checked IR line shows: the name and type, and for tensors
    /// where the view lies.
    fn shown_text(&self, shown: &Shown, line: &Line) -> String {
        let names = self.checker.names();
        let written = || match line {
            Line::Expr(expr) => print_expr(expr),
            Line::Empty | Line::Const(_) | Line::Kernel(_) | Line::Stmt(_) => String::new(),
        };
        match shown {
            Shown::Nothing => String::new(),
            Shown::Const { name, value } => format!("{name} : const = {value}\n"),
            Shown::Tensor { name, view } => {
                let label = name.as_ref().map_or_else(written, |n| format!("%{n}"));
                format!(
                    "{label} : {}\n{}",
                    tensor_type_text(&view.ty, &names),
                    view_line(&self.checker, view, &names)
                )
            }
            Shown::Group { name, ty } => {
                let label = name.as_ref().map_or_else(written, |n| format!("#{n}"));
                format!("{label} : {}\n", group_type_text(ty, &names))
            }
            Shown::Indices(bound) => bound
                .iter()
                .map(|(name, expr)| format!("@{name} : index = {}\n", expr_text(expr, &names)))
                .collect(),
            Shown::Spec(spec) => format!(
                "spec checked: {} output(s), {} input(s), {}\n",
                spec.outputs.len(),
                spec.inputs.len(),
                match &spec.body {
                    Some(body) => format!("decomposed into {} statement(s)", body.len()),
                    None => "atomic".to_string(),
                }
            ),
            Shown::Kernel(kernel) => format!(
                "kernel {} checked: {} parameter(s), {} buffer(s), grid {}, block {}\n",
                kernel.name,
                kernel.params.len(),
                kernel.buffers.len(),
                group_type_text(&kernel.grid, &names),
                group_type_text(&kernel.block, &names)
            ),
        }
    }

    fn command(&mut self, input: &str) -> Result<Reply, Failure> {
        let command = command::parse(input)?;
        let draws = match &command {
            Command::Show { .. }
            | Command::Atom(Some(_))
            | Command::TiledAtom { .. }
            | Command::Map { .. }
            | Command::Banks { .. }
            | Command::Swizzle { .. }
            | Command::Tma { .. } => true,
            Command::Quit
            | Command::Help(_)
            | Command::Atom(None)
            | Command::Save(_)
            | Command::Names
            | Command::Set { .. }
            | Command::Reset => false,
        };
        let text = match &command {
            Command::Quit => return Ok(Reply::Quit),
            Command::Help(topic) => help::help(topic.as_ref())?,
            Command::Show { target, blocks } => pictures::show(&self.context(), target, *blocks)?,
            Command::Atom(None) => help::atoms(),
            Command::Atom(Some(name)) => {
                let atom_name: AtomName = name.text.parse().map_err(|e| {
                    Failure::new(codes::UNKNOWN_NAME, format!("{e}"), name.span())
                        .label("no such atom")
                })?;
                atom_colored_by(atom_name, &self.style, self.color_by)
            }
            Command::TiledAtom {
                name,
                warps,
                repeat,
            } => self.tiled_atom(name, *warps, *repeat)?,
            Command::Map {
                target,
                threads,
                zoom,
            } => threads::map(&self.context(), target, threads, zoom.as_ref())?,
            Command::Banks {
                target,
                threads,
                width,
            } => threads::banks_of(&self.context(), target, threads.as_ref(), *width)?,
            Command::Swizzle {
                params,
                target,
                threads,
                width,
            } => threads::swizzle(
                &self.context(),
                *params,
                target.as_ref(),
                threads.as_ref(),
                *width,
            )?,
            Command::Tma { dst, src } => tma::tma(&self.context(), dst, src)?,
            Command::Save(file) => return self.save(file).map(Reply::Text),
            Command::Names => self.names_text(),
            Command::Set { key, value } => self.set(key, value.as_ref())?,
            Command::Reset => {
                let color_by = self.color_by;
                *self = Session::new(self.style);
                self.color_by = color_by;
                "every name forgotten\n".to_string()
            }
        };
        if draws {
            self.last_picture = Some(input.to_string());
        }
        Ok(Reply::Text(text))
    }

    /// `:atom NAME warps MxN repeat MxN`: an `mma.m16n8k16` tiled over a
    /// warp grid and repeated, A left, B above, C in place.
    fn tiled_atom(
        &self,
        name: &Arg,
        warps: Option<Grid>,
        repeat: Option<Grid>,
    ) -> Result<String, Failure> {
        let atom_name: AtomName = name.text.parse().map_err(|e| {
            Failure::new(codes::UNKNOWN_NAME, format!("{e}"), name.span()).label("no such atom")
        })?;
        let input = match atom_name {
            AtomName::MmaM16n8k16 { input } => input,
            AtomName::Ldmatrix { .. }
            | AtomName::MmaCPairAsA
            | AtomName::MmaM8n8k4
            | AtomName::WgmmaM64nNk16 { .. }
            | AtomName::WgmmaShared { .. }
            | AtomName::VoltaMacro
            | AtomName::LdmatrixForMmaA => {
                return Err(Failure::new(
                    codes::BAD_ARGUMENTS,
                    format!("`{atom_name}` is not tiled: only mma.m16n8k16 is"),
                    name.span(),
                )
                .label("cannot be tiled")
                .help("e.g. `:atom mma.m16n8k16 warps 2x2 repeat 2x4`"));
            }
        };
        let extents = |grid: Option<Grid>| grid.map_or((1, 1), |g| (g.m, g.n));
        let at = warps.or(repeat).map_or(name.span(), |g| g.span);
        let tiled = TiledMma::new(input, extents(warps), extents(repeat))
            .and_then(|tiled| tiled_mma(&tiled, &self.style, self.color_by))
            .map_err(|e| {
                Failure::new(codes::CANNOT_DRAW, e.to_string(), at).label("cannot draw this")
            })?;
        Ok(tiled)
    }

    /// `:names`: every name with its value or type.
    fn names_text(&self) -> String {
        let names = self.checker.names();
        let mut out = String::new();
        for (name, value) in &self.bound {
            out.push_str(&format!("{name} = {}\n", value.cute()));
        }
        for (name, value) in &self.constants {
            out.push_str(&format!("{name} : const = {value}\n"));
        }
        for name in self.checker.defined() {
            let (sigil, bare) = name.split_at(1);
            let line = match sigil {
                "%" => self
                    .checker
                    .tensor(bare)
                    .map(|view| tensor_type_text(&view.ty, &names)),
                "#" => self
                    .checker
                    .group(bare)
                    .map(|ty| group_type_text(ty, &names)),
                _ => self
                    .checker
                    .index(bare)
                    .map(|expr| format!("index = {}", expr_text(expr, &names))),
            };
            if let Some(line) = line {
                out.push_str(&format!("{name} : {line}\n"));
            }
        }
        if out.is_empty() {
            out.push_str("no names yet\n");
        }
        out
    }

    /// `:set width N | height N | color on|off`.
    fn set(&mut self, key: &Arg, value: Option<&Arg>) -> Result<String, Failure> {
        let usage = format!("usage: {}", command::usage("set"));
        let Some(value) = value else {
            return Err(Failure::new(
                codes::BAD_ARGUMENTS,
                format!("`:set {}` needs a value", key.text),
                key.span(),
            )
            .help(usage));
        };
        let number = |low: usize| {
            value
                .text
                .parse::<usize>()
                .ok()
                .filter(|n| *n >= low && *n <= 100_000)
                .ok_or_else(|| {
                    Failure::new(
                        codes::BAD_ARGUMENTS,
                        format!("`{}` is not a number from {low} to 100000", value.text),
                        value.span(),
                    )
                    .help(usage.clone())
                })
        };
        match key.text.as_str() {
            "colorby" | "colourby" => {
                self.color_by = value.text.parse().map_err(|reason: String| {
                    Failure::new(codes::BAD_ARGUMENTS, reason, value.span())
                        .help("e.g. `:set colorby warp`")
                })?;
                return Ok(format!(
                    "thread-data maps and atoms coloured by {}\n",
                    self.color_by
                ));
            }
            "width" => self.style.width = number(16)?,
            "height" => self.style.height = number(1)?,
            "color" | "colour" => {
                self.style.color = match value.text.as_str() {
                    "on" | "always" => true,
                    "off" | "never" => false,
                    _ => {
                        return Err(Failure::new(
                            codes::BAD_ARGUMENTS,
                            format!("`{}` is neither `on` nor `off`", value.text),
                            value.span(),
                        )
                        .help(usage));
                    }
                }
            }
            other => {
                return Err(Failure::new(
                    codes::BAD_ARGUMENTS,
                    format!("no setting `{other}`"),
                    key.span(),
                )
                .help(usage));
            }
        }
        Ok(format!(
            "width {}, height {}, color {}\n",
            self.style.width,
            self.style.height,
            if self.style.color { "on" } else { "off" }
        ))
    }
}

/// The text before a `//` comment (layout expressions have no `/`).
fn without_comment(text: &str) -> &str {
    text.find("//").map_or(text, |at| &text[..at])
}
