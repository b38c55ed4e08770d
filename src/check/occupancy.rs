//! Stage 2, check: a kernel's occupancy attributes
//! (`kernel gemm (min_blocks_per_sm = 2, max_registers = 128) { … }`) become
//! an `ir::Occupancy` of positive constants that one SM can hold.
//!
//! An SM holds at most 2048 threads and 65536 registers (sm_70 to sm_90), and
//! a thread at most 255 registers. A request past those is an error here
//! rather than an assembler failure or a kernel that cannot launch.

use crate::diag::Diagnostic;
use crate::ir;
use crate::syntax::ast::{self, KernelAttributeKind};

use super::codes;
use super::env::{Checked, Checker, Poisoned};

/// Threads one SM holds at once.
pub const THREADS_PER_SM: i64 = 2048;
/// 32-bit registers in one SM's register file.
pub const REGISTERS_PER_SM: i64 = 65536;
/// Registers one thread may use.
pub const REGISTERS_PER_THREAD: i64 = 255;

/// Registers are allocated to a thread in multiples of this many.
pub const REGISTER_GRANULE: i64 = 8;

/// The registers per thread an occupancy request leaves a block of
/// `block_size` threads, as ptxas computes it: `max_registers`, and for
/// `min_blocks_per_sm` the SM's register file shared by that many blocks,
/// rounded down to the allocation granule; at most 255. `None` when the
/// request sets no limit.
pub fn registers_per_thread(occupancy: ir::Occupancy, block_size: u32) -> Option<u32> {
    let by_blocks = occupancy.min_blocks_per_sm.map(|blocks| {
        let share = REGISTERS_PER_SM / (i64::from(blocks) * i64::from(block_size.max(1)));
        share / REGISTER_GRANULE * REGISTER_GRANULE
    });
    let by_cap = occupancy.max_registers.map(i64::from);
    let limit = by_blocks.into_iter().chain(by_cap).min()?;
    Some(limit.min(REGISTERS_PER_THREAD) as u32)
}

impl Checker {
    /// The kernel's occupancy request; `block_size` is the threads per
    /// block when the launch is known. Reports every bad attribute.
    pub(crate) fn occupancy(
        &mut self,
        kernel: &ast::Kernel,
        block_size: Option<i64>,
    ) -> Checked<ir::Occupancy> {
        let mut occupancy = ir::Occupancy::default();
        let mut failed = false;
        for attribute in &kernel.attributes {
            match self.attribute(attribute, block_size) {
                Ok(value) => match attribute.kind {
                    KernelAttributeKind::MinBlocksPerSm => {
                        occupancy.min_blocks_per_sm = Some(value)
                    }
                    KernelAttributeKind::MaxRegisters => occupancy.max_registers = Some(value),
                },
                Err(Poisoned) => failed = true,
            }
        }
        if failed { Err(Poisoned) } else { Ok(occupancy) }
    }

    fn attribute(
        &mut self,
        attribute: &ast::KernelAttribute,
        block_size: Option<i64>,
    ) -> Checked<u32> {
        let name = attribute.kind.name();
        let (what, most, limit, unit) = match attribute.kind {
            KernelAttributeKind::MinBlocksPerSm => (
                "the blocks per SM of `min_blocks_per_sm`",
                THREADS_PER_SM,
                THREADS_PER_SM,
                "threads",
            ),
            KernelAttributeKind::MaxRegisters => (
                "the registers of `max_registers`",
                REGISTERS_PER_THREAD,
                REGISTERS_PER_SM,
                "registers",
            ),
        };
        let value = self.constant(&attribute.value, what)?;
        if !(1..=most).contains(&value) {
            return Err(self.fail(
                Diagnostic::error(
                    codes::BAD_OCCUPANCY,
                    format!("`{name} = {value}`"),
                    attribute.value.span,
                )
                .with_label(format!("`{name}` is 1 to {most}"))
                .with_help(format!(
                    "leave `{name}` out to let the assembler choose, or give a value from 1 to {most}"
                )),
            ));
        }
        if let Some(block) = block_size {
            // A block's threads (registers) times the value must fit one SM.
            let total = block.saturating_mul(value);
            if total > limit {
                let fitting = limit / block;
                return Err(self.fail(
                    Diagnostic::error(
                        codes::OCCUPANCY_EXCEEDS_SM,
                        format!("`{name} = {value}` asks more of an SM than it has"),
                        attribute.span,
                    )
                    .with_label(format!(
                        "{block} threads × {value} = {total} {unit}; an SM holds {limit}"
                    ))
                    .with_help(format!(
                        "with {block} threads per block, `{name}` is at most {fitting}"
                    )),
                ));
            }
        }
        Ok(value as u32)
    }
}

#[cfg(test)]
mod tests {
    use crate::check::check_file;
    use crate::syntax::parse_file;

    /// A 256-thread kernel with the attribute list `attributes`.
    fn source(attributes: &str) -> String {
        format!(
            "const B = 2\nkernel k {attributes} {{\n    %x:[256].fp32.GL\n    #g:[1].block\n    #t:[256].thread\n    %x <- Init<0.0><<<#g, #t>>>()\n}}\n"
        )
    }

    fn check(attributes: &str) -> Result<crate::ir::Occupancy, Vec<String>> {
        let file = parse_file("k.gph", &source(attributes)).expect("parses");
        match check_file(&file, &[]) {
            Ok(program) => Ok(program.kernels[0].occupancy),
            Err(diagnostics) => Err(diagnostics
                .into_iter()
                .map(|d| d.code.to_string())
                .collect()),
        }
    }

    #[test]
    fn constant_attributes_become_the_occupancy_request() {
        let occupancy = check("(min_blocks_per_sm = B * 4, max_registers = 64)").unwrap();
        assert_eq!(occupancy.min_blocks_per_sm, Some(8));
        assert_eq!(occupancy.max_registers, Some(64));
        let none = check("").unwrap();
        assert_eq!(none, crate::ir::Occupancy::default());
    }

    #[test]
    fn values_out_of_range_or_past_the_sm_are_errors() {
        assert_eq!(check("(min_blocks_per_sm = 0)"), Err(vec!["E0270".into()]));
        assert_eq!(check("(max_registers = 256)"), Err(vec!["E0270".into()]));
        // 256 threads × 9 blocks = 2304 threads > 2048.
        assert_eq!(check("(min_blocks_per_sm = 9)"), Err(vec!["E0271".into()]));
        // 256 threads × 255 registers = 65280 fits; the limit is per thread.
        assert!(check("(max_registers = 255)").is_ok());
        // Both bad: both reported.
        assert_eq!(
            check("(min_blocks_per_sm = 16, max_registers = -1)"),
            Err(vec!["E0271".into(), "E0270".into()])
        );
    }

    #[test]
    fn the_register_budget_is_the_sm_share_rounded_to_the_granule() {
        use super::registers_per_thread;
        use crate::ir::Occupancy;
        let blocks = |n| Occupancy {
            min_blocks_per_sm: Some(n),
            max_registers: None,
        };
        assert_eq!(registers_per_thread(Occupancy::default(), 256), None);
        assert_eq!(registers_per_thread(blocks(1), 256), Some(255));
        assert_eq!(registers_per_thread(blocks(2), 256), Some(128));
        // 65536 / 768 = 85.3: ptxas allocates 80.
        assert_eq!(registers_per_thread(blocks(3), 256), Some(80));
        let both = Occupancy {
            min_blocks_per_sm: Some(2),
            max_registers: Some(100),
        };
        assert_eq!(registers_per_thread(both, 256), Some(100));
    }
}
