//! Launch stage: `--dim NAME=VALUE` — reading the values a command line
//! gives for symbolic dimensions, and binding them to a kernel's dims.
//!
//! Symbolic dims are `.u32` kernel parameters (docs/language.md §6), so a
//! value is an integer from 1 to 2^32 − 1. One command line may run several
//! kernels of a file: a name is an error only when no kernel run has it,
//! and each kernel takes the values of its own dims.

use std::str::FromStr;

use super::PlanError;
use crate::ir::Kernel;

/// One `--dim NAME=VALUE`.
///
/// Rule: `name` is an identifier; `1 ≤ value ≤ u32::MAX`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct DimArg {
    /// The symbolic dimension's name.
    pub name: String,
    /// Its value.
    pub value: u32,
}

impl FromStr for DimArg {
    type Err = PlanError;

    fn from_str(text: &str) -> Result<DimArg, PlanError> {
        let Some((name, value)) = text.split_once('=') else {
            return Err(PlanError::DimSyntax(text.to_string()));
        };
        let name = name.trim();
        let is_identifier = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !is_identifier {
            return Err(PlanError::DimSyntax(text.to_string()));
        }
        let value = value
            .trim()
            .replace('_', "")
            .parse::<u32>()
            .ok()
            .filter(|&v| v >= 1)
            .ok_or_else(|| PlanError::DimValue {
                name: name.to_string(),
                text: value.trim().to_string(),
            })?;
        Ok(DimArg {
            name: name.to_string(),
            value,
        })
    }
}

/// Every `--dim` of one command line.
///
/// Rule: names are unique.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct DimValues {
    args: Vec<DimArg>,
}

impl DimValues {
    /// The values given, rejecting a name given twice.
    pub fn new(args: Vec<DimArg>) -> Result<DimValues, PlanError> {
        for (position, arg) in args.iter().enumerate() {
            if let Some(first) = args[..position].iter().find(|a| a.name == arg.name) {
                return Err(PlanError::DuplicateDim {
                    name: arg.name.clone(),
                    first: first.value,
                    second: arg.value,
                });
            }
        }
        Ok(DimValues { args })
    }

    /// The values, in command-line order.
    pub fn args(&self) -> &[DimArg] {
        &self.args
    }

    /// An error for the first name that none of `kernels` has.
    pub fn check_known(&self, kernels: &[&Kernel]) -> Result<(), PlanError> {
        let has = |name: &str| {
            kernels
                .iter()
                .any(|kernel| kernel.dims.iter().any(|dim| dim.name == name))
        };
        match self.args.iter().find(|arg| !has(&arg.name)) {
            None => Ok(()),
            Some(arg) => Err(PlanError::UnknownDim {
                name: arg.name.clone(),
                kernels: kernels
                    .iter()
                    .map(|kernel| {
                        let dims: Vec<&str> = kernel.dims.iter().map(|d| d.name.as_str()).collect();
                        if dims.is_empty() {
                            format!("`{}` has none", kernel.name)
                        } else {
                            format!("`{}` has {}", kernel.name, dims.join(", "))
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("; "),
            }),
        }
    }

    /// `kernel`'s dims in its order; every one must be given.
    pub fn bind(&self, kernel: &Kernel) -> Result<Vec<i64>, PlanError> {
        let value = |name: &str| self.args.iter().find(|arg| arg.name == name);
        let missing: Vec<String> = kernel
            .dims
            .iter()
            .filter(|dim| value(&dim.name).is_none())
            .map(|dim| dim.name.clone())
            .collect();
        if !missing.is_empty() {
            return Err(PlanError::MissingDims {
                kernel: kernel.name.clone(),
                missing,
                all: kernel.dims.iter().map(|d| d.name.clone()).collect(),
            });
        }
        Ok(kernel
            .dims
            .iter()
            .filter_map(|dim| value(&dim.name))
            .map(|arg| i64::from(arg.value))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::{Options, check};

    fn kernels(source: &str) -> Vec<Kernel> {
        check("gemm.gph", source, &Options::default())
            .unwrap_or_else(|d| panic!("{d:#?}"))
            .program
            .kernels
    }

    const TWO: &str = "kernel gemm {\n%a:[M, K].fp16.GL\n%c:[M, N].fp32.GL\n#g:[1].block\n#t:[32].thread\n\
                       %c <- Init<0.0><<<#g, #t>>>()\n}\n\
                       kernel copy {\n%x:[B].fp32.GL\n#g:[1].block\n#t:[32].thread\n\
                       %x <- Init<1.0><<<#g, #t>>>()\n}\n";

    #[test]
    fn arguments_parse_or_say_what_is_wrong() {
        let arg: DimArg = "M=4096".parse().unwrap();
        assert_eq!((arg.name.as_str(), arg.value), ("M", 4096));
        assert_eq!("K = 1_024".parse::<DimArg>().unwrap().value, 1024);
        let message = |text: &str| text.parse::<DimArg>().unwrap_err().to_string();
        assert_eq!(
            message("M"),
            "`--dim M`: expected NAME=VALUE, e.g. `--dim M=4096`"
        );
        assert_eq!(
            message("4M=3"),
            "`--dim 4M=3`: expected NAME=VALUE, e.g. `--dim M=4096`"
        );
        for bad in ["M=0", "M=-4", "M=abc", "M=4294967296"] {
            assert!(
                message(bad)
                    .ends_with("must be an integer from 1 to 4294967295 (a .u32 parameter)"),
                "{bad}: {}",
                message(bad)
            );
        }
    }

    #[test]
    fn values_bind_in_the_kernels_order() {
        let kernels = kernels(TWO);
        let args = ["N=8", "B=3", "M=64", "K=16"].map(|a| a.parse().unwrap());
        let values = DimValues::new(args.to_vec()).unwrap();
        values.check_known(&[&kernels[0], &kernels[1]]).unwrap();
        assert_eq!(values.bind(&kernels[0]).unwrap(), [64, 16, 8]);
        assert_eq!(values.bind(&kernels[1]).unwrap(), [3]);
    }

    #[test]
    fn unknown_missing_and_repeated_names_are_errors() {
        let kernels = kernels(TWO);
        let values = DimValues::new(vec!["M=64".parse().unwrap(), "Q=2".parse().unwrap()]).unwrap();
        assert_eq!(
            values
                .check_known(&[&kernels[0], &kernels[1]])
                .unwrap_err()
                .to_string(),
            "`--dim Q` names no symbolic dimension of the kernels run (`gemm` has M, K, N; `copy` has B)"
        );
        assert_eq!(
            values.bind(&kernels[0]).unwrap_err().to_string(),
            "kernel `gemm` needs `--dim` values for K, N (its symbolic dimensions: M, K, N)"
        );
        let twice = DimValues::new(vec!["M=64".parse().unwrap(), "M=32".parse().unwrap()]);
        assert_eq!(
            twice.unwrap_err().to_string(),
            "`--dim M` is given twice (64 and 32)"
        );
    }
}
