//! Every instruction the compiler can emit runs on the CPU executor: each
//! template of the catalogue, written with placeholder operands, decodes to
//! an operation (a new template without executor support fails here), and
//! an instruction the executor does not know is an error naming it.

use graphene::exec::{self, ExecError};
use graphene::ptx::Catalogue;
use graphene::ptx::template::{Piece, SlotKind, Template};

/// The template's text with every slot written as `16` (a vector slot as
/// `{16}`, so that operands built of vectors — a bulk copy's
/// `[map, {coordinates}]` — keep their shape).
fn placeholder_text(template: &Template) -> String {
    template
        .pieces
        .iter()
        .map(|piece| match piece {
            Piece::Literal(literal) => literal.as_str(),
            Piece::Slot(index)
                if matches!(template.slots[*index].kinds[0], SlotKind::Vector(..)) =>
            {
                "{16}"
            }
            Piece::Slot(_) => "16",
        })
        .collect()
}

fn module_of(lines: &[String]) -> String {
    format!(".visible .entry probe()\n{{\n{}\n}}\n", lines.join("\n"))
}

#[test]
fn every_catalogue_entry_is_known_to_the_executor() {
    let catalogue = Catalogue::builtin().expect("the built-in catalogue loads");
    let lines: Vec<String> = catalogue.templates().map(|t| placeholder_text(t)).collect();
    assert!(lines.len() > 50, "{} templates", lines.len());
    let unknown = exec::unknown_instructions(&module_of(&lines)).expect("parses");
    assert!(unknown.is_empty(), "{unknown:#?}");
}

#[test]
fn an_unknown_instruction_is_an_error_naming_it() {
    let text = module_of(&[
        "    prmt.b32 %r1, %r2, %r3, 16;".to_string(),
        "    ret;".to_string(),
    ]);
    let error = exec::run_kernel(&text, "probe", 1, 32, 0, &[]).unwrap_err();
    assert_eq!(
        error,
        ExecError::Unknown {
            opcode: "prmt.b32".to_string(),
            line: 3
        }
    );
    assert!(error.to_string().contains("`prmt.b32`"), "{error}");
}
