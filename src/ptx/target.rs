//! PTX model: compute capabilities, PTX ISA versions, and the target a module
//! is written for (`.version` / `.target`).
//!
//! Every catalogue entry states the lowest `sm_XX` and PTX ISA version it
//! needs; a module's target is the maximum over what it uses, raised to an
//! explicitly requested architecture. Nothing here knows about instructions
//! beyond their stated requirement.

use std::fmt;
use std::str::FromStr;

use super::error::PtxError;

/// A compute capability, `sm_XX`, stored as the number `XX` (`sm_86` → 86).
///
/// Rule: ordering is capability ordering; every capability at or above an
/// instruction's minimum can run it (the project emits no `sm_90a` forms).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Sm(pub u32);

impl fmt::Display for Sm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sm_{}", self.0)
    }
}

impl FromStr for Sm {
    type Err = PtxError;

    /// Parses `sm_XX` for any two- or three-digit `XX`.
    fn from_str(text: &str) -> Result<Self, PtxError> {
        let bad = || PtxError::BadTarget {
            text: text.to_string(),
            expected: "sm_XX",
        };
        let digits = text.strip_prefix("sm_").ok_or_else(bad)?;
        if digits.len() < 2 || digits.len() > 3 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        digits.parse().map(Sm).map_err(|_| bad())
    }
}

/// A PTX ISA version, written `major.minor` (`.version 7.8`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct PtxVersion {
    /// The part before the dot.
    pub major: u32,
    /// The part after the dot (a single digit in every published version).
    pub minor: u32,
}

impl PtxVersion {
    /// The version `major.minor`.
    pub const fn new(major: u32, minor: u32) -> Self {
        PtxVersion { major, minor }
    }
}

impl fmt::Display for PtxVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl FromStr for PtxVersion {
    type Err = PtxError;

    /// Parses `M.m` with a one-digit minor part, e.g. `7.0`, `8.3`.
    fn from_str(text: &str) -> Result<Self, PtxError> {
        let bad = || PtxError::BadTarget {
            text: text.to_string(),
            expected: "a PTX ISA version such as 7.0",
        };
        let (major, minor) = text.split_once('.').ok_or_else(bad)?;
        let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !all_digits(major) || minor.len() != 1 || !all_digits(minor) {
            return Err(bad());
        }
        Ok(PtxVersion::new(
            major.parse().map_err(|_| bad())?,
            minor.parse().map_err(|_| bad())?,
        ))
    }
}

/// What one instruction needs from the target: a minimum capability and PTX
/// ISA version.
///
/// Rule: instructions older than the project's floor (Volta) state the floor,
/// `sm_70` and PTX 6.0, rather than their historical minimum.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Requirement {
    /// The lowest compute capability that has the instruction.
    pub sm: Sm,
    /// The lowest PTX ISA version that has the instruction.
    pub ptx: PtxVersion,
}

impl Requirement {
    /// The project's floor: the lowest target it ever writes.
    pub const FLOOR: Requirement = Requirement {
        sm: Sm(70),
        ptx: PtxVersion::new(6, 0),
    };
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} and PTX ISA {}", self.sm, self.ptx)
    }
}

/// An architecture a user may ask for (`--arch`): the GPUs the project
/// targets.
///
/// Rule: each architecture implies the lowest PTX ISA version that knows its
/// `.target` name, so asking for `sm_90` alone already raises `.version` to 7.8.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum Arch {
    /// Volta (V100).
    Sm70,
    /// Ampere (A100).
    Sm80,
    /// Ampere (RTX 30xx, A10, A40).
    Sm86,
    /// Ada (RTX 40xx, L4, L40).
    Sm89,
    /// Hopper (H100, H200), without the `sm_90a` extensions.
    Sm90,
}

impl Arch {
    /// Every requestable architecture, oldest first.
    pub const ALL: [Arch; 5] = [Arch::Sm70, Arch::Sm80, Arch::Sm86, Arch::Sm89, Arch::Sm90];

    /// The compute capability.
    pub fn sm(self) -> Sm {
        match self {
            Arch::Sm70 => Sm(70),
            Arch::Sm80 => Sm(80),
            Arch::Sm86 => Sm(86),
            Arch::Sm89 => Sm(89),
            Arch::Sm90 => Sm(90),
        }
    }

    /// The lowest PTX ISA version whose `.target` accepts this architecture.
    pub fn min_ptx(self) -> PtxVersion {
        match self {
            Arch::Sm70 => PtxVersion::new(6, 0),
            Arch::Sm80 => PtxVersion::new(7, 0),
            Arch::Sm86 => PtxVersion::new(7, 1),
            Arch::Sm89 | Arch::Sm90 => PtxVersion::new(7, 8),
        }
    }

    /// The requirement an explicit request for this architecture imposes.
    pub fn requirement(self) -> Requirement {
        Requirement {
            sm: self.sm(),
            ptx: self.min_ptx(),
        }
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.sm().fmt(f)
    }
}

impl FromStr for Arch {
    type Err = PtxError;

    /// Parses `sm_70`, `sm_80`, `sm_86`, `sm_89` or `sm_90`.
    fn from_str(text: &str) -> Result<Self, PtxError> {
        Arch::ALL
            .into_iter()
            .find(|arch| arch.to_string() == text)
            .ok_or_else(|| PtxError::BadTarget {
                text: text.to_string(),
                expected: "one of sm_70, sm_80, sm_86, sm_89, sm_90",
            })
    }
}

/// The `.version` and `.target` a module is written with.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Target {
    /// Written as `.version`.
    pub ptx: PtxVersion,
    /// Written as `.target`.
    pub sm: Sm,
}

/// The lowest PTX ISA version that knows the `.target` name of `sm`.
///
/// Capabilities between the requestable ones (e.g. `sm_75`, needed by
/// `ldmatrix`) appear when no architecture was requested.
pub fn min_ptx_for_sm(sm: Sm) -> PtxVersion {
    match sm.0 {
        0..=70 => PtxVersion::new(6, 0),
        71..=72 => PtxVersion::new(6, 1),
        73..=75 => PtxVersion::new(6, 3),
        76..=80 => PtxVersion::new(7, 0),
        81..=86 => PtxVersion::new(7, 1),
        87 => PtxVersion::new(7, 4),
        _ => PtxVersion::new(7, 8),
    }
}

/// Resolves the target for a set of requirements, each tagged with the name of
/// the instruction that imposes it.
///
/// The result is the floor, raised to every requirement and to `requested`.
/// Errors when `requested` is below what some instruction needs, naming the
/// first such instruction (in the order given, so the message is stable).
pub fn resolve_target<'a>(
    requirements: impl IntoIterator<Item = (&'a str, Requirement)>,
    requested: Option<Arch>,
) -> Result<Target, PtxError> {
    let mut sm = Requirement::FLOOR.sm;
    let mut ptx = Requirement::FLOOR.ptx;
    for (instruction, needs) in requirements {
        match requested {
            Some(arch) if arch.sm() < needs.sm => {
                return Err(PtxError::ArchTooLow {
                    instruction: instruction.to_string(),
                    needs,
                    requested: arch,
                });
            }
            Some(_) | None => {}
        }
        sm = sm.max(needs.sm);
        ptx = ptx.max(needs.ptx);
    }
    if let Some(arch) = requested {
        sm = sm.max(arch.sm());
        ptx = ptx.max(arch.min_ptx());
    }
    Ok(Target {
        ptx: ptx.max(min_ptx_for_sm(sm)),
        sm,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needs(sm: u32, major: u32, minor: u32) -> Requirement {
        Requirement {
            sm: Sm(sm),
            ptx: PtxVersion::new(major, minor),
        }
    }

    #[test]
    fn no_instructions_give_the_floor() {
        let target = resolve_target([], None).unwrap();
        assert_eq!((target.sm, target.ptx), (Sm(70), PtxVersion::new(6, 0)));
    }

    #[test]
    fn the_highest_requirement_wins() {
        let target = resolve_target(
            [
                ("ldmatrix", needs(75, 6, 5)),
                ("mma.m8n8k4", needs(70, 6, 4)),
            ],
            None,
        )
        .unwrap();
        assert_eq!((target.sm, target.ptx), (Sm(75), PtxVersion::new(6, 5)));
    }

    #[test]
    fn a_requested_arch_raises_both_sm_and_version() {
        let target = resolve_target([("ldmatrix", needs(75, 6, 5))], Some(Arch::Sm90)).unwrap();
        assert_eq!((target.sm, target.ptx), (Sm(90), PtxVersion::new(7, 8)));
    }

    #[test]
    fn a_requested_arch_below_an_instruction_names_it() {
        let error = resolve_target(
            [
                ("add.u32", needs(70, 6, 0)),
                ("cp.async.cg", needs(80, 7, 0)),
            ],
            Some(Arch::Sm70),
        )
        .unwrap_err();
        let message = error.to_string();
        assert!(message.contains("cp.async.cg"), "{message}");
        assert!(message.contains("sm_80"), "{message}");
        assert!(message.contains("sm_70"), "{message}");
    }

    #[test]
    fn arch_names_round_trip_and_unknown_ones_are_errors() {
        for arch in Arch::ALL {
            assert_eq!(arch.to_string().parse::<Arch>().unwrap(), arch);
        }
        assert!("sm_75".parse::<Arch>().is_err());
        assert!("sm90".parse::<Arch>().is_err());
    }

    #[test]
    fn versions_and_capabilities_parse_strictly() {
        assert_eq!("7.8".parse::<PtxVersion>().unwrap(), PtxVersion::new(7, 8));
        assert!("7".parse::<PtxVersion>().is_err());
        assert!("7.10".parse::<PtxVersion>().is_err());
        assert!("x.0".parse::<PtxVersion>().is_err());
        assert_eq!("sm_75".parse::<Sm>().unwrap(), Sm(75));
        assert!("sm_7".parse::<Sm>().is_err());
        assert!("sm_7a".parse::<Sm>().is_err());
    }
}
