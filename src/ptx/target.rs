//! PTX model: compute capabilities, PTX ISA versions, and the target a module
//! is written for (`.version` / `.target`).
//!
//! Every catalogue entry states the lowest `sm_XX` and PTX ISA version it
//! needs, and whether it exists only on an arch-specific target (`sm_90a`:
//! Hopper's `wgmma`); a module's target is the maximum over what it uses,
//! raised to an explicitly requested architecture. Nothing here knows about
//! instructions beyond their stated requirement.

use std::fmt;
use std::str::FromStr;

use super::error::PtxError;

/// A compute capability, `sm_XX`, stored as the number `XX` (`sm_86` → 86).
///
/// Rule: ordering is capability ordering; every capability at or above an
/// instruction's minimum can run it, unless the instruction is
/// arch-specific (see [`TargetName`]), which says so separately.
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

/// What `.target` writes and `ptxas -arch=` takes: a compute capability,
/// suffixed `a` when it is that capability's arch-specific target
/// (`sm_90a`).
///
/// Rule: code for a plain target runs on its capability and every later one;
/// code for an arch-specific target uses instructions that exist only on
/// exactly its capability, so it runs only there (`sm_90a`: compute
/// capability 9.0, never a later GPU).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct TargetName {
    /// The capability.
    pub sm: Sm,
    /// Whether the `a` suffix is written.
    pub arch_specific: bool,
}

impl TargetName {
    /// Whether code for this target runs on a device of `capability`
    /// (`sm_90a` on 9.0 only; `sm_80` on 8.0 and later).
    pub fn runs_on(self, capability: Sm) -> bool {
        if self.arch_specific {
            capability == self.sm
        } else {
            capability >= self.sm
        }
    }
}

impl From<Sm> for TargetName {
    fn from(sm: Sm) -> TargetName {
        TargetName {
            sm,
            arch_specific: false,
        }
    }
}

impl fmt::Display for TargetName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.sm.fmt(f)?;
        if self.arch_specific {
            f.write_str("a")?;
        }
        Ok(())
    }
}

impl FromStr for TargetName {
    type Err = PtxError;

    /// Parses `sm_XX` or `sm_XXa` for any two- or three-digit `XX`.
    fn from_str(text: &str) -> Result<Self, PtxError> {
        let (plain, arch_specific) = match text.strip_suffix('a') {
            Some(plain) => (plain, true),
            None => (text, false),
        };
        let sm = plain.parse::<Sm>().map_err(|_| PtxError::BadTarget {
            text: text.to_string(),
            expected: "sm_XX or sm_XXa",
        })?;
        Ok(TargetName { sm, arch_specific })
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
/// ISA version, and whether it exists only on that capability's
/// arch-specific target.
///
/// Rule: instructions older than the project's floor (Volta) state the floor,
/// `sm_70` and PTX 6.0, rather than their historical minimum. An
/// arch-specific requirement (`sm_90a`) is met only by the arch-specific
/// target of exactly `sm`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Requirement {
    /// The lowest compute capability that has the instruction (the only
    /// one, when `arch_specific`).
    pub sm: Sm,
    /// The lowest PTX ISA version that has the instruction.
    pub ptx: PtxVersion,
    /// Whether the instruction exists only on `.target sm_XXa`.
    pub arch_specific: bool,
}

impl Requirement {
    /// The project's floor: the lowest target it ever writes.
    pub const FLOOR: Requirement = Requirement {
        sm: Sm(70),
        ptx: PtxVersion::new(6, 0),
        arch_specific: false,
    };

    /// The target name the requirement asks for (`sm_80`, `sm_90a`).
    pub fn target_name(self) -> TargetName {
        TargetName {
            sm: self.sm,
            arch_specific: self.arch_specific,
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} and PTX ISA {}", self.target_name(), self.ptx)
    }
}

/// An architecture a user may ask for (`--arch`): the GPUs the project
/// targets.
///
/// Rule: each architecture implies the lowest PTX ISA version that knows its
/// `.target` name, so asking for `sm_90` alone already raises `.version` to
/// 7.8, and `sm_90a` to 8.0. Only `sm_90a` has the arch-specific
/// instructions (`wgmma`), and its code runs only on compute capability 9.0.
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
    /// Hopper with its arch-specific instructions (`wgmma`, `setmaxnreg`):
    /// `.target sm_90a`, which runs on compute capability 9.0 only.
    Sm90a,
}

impl Arch {
    /// Every requestable architecture, oldest first (`sm_90a` after `sm_90`).
    pub const ALL: [Arch; 6] = [
        Arch::Sm70,
        Arch::Sm80,
        Arch::Sm86,
        Arch::Sm89,
        Arch::Sm90,
        Arch::Sm90a,
    ];

    /// The compute capability (`sm_90a` → `sm_90`).
    pub fn sm(self) -> Sm {
        match self {
            Arch::Sm70 => Sm(70),
            Arch::Sm80 => Sm(80),
            Arch::Sm86 => Sm(86),
            Arch::Sm89 => Sm(89),
            Arch::Sm90 | Arch::Sm90a => Sm(90),
        }
    }

    /// Whether this is an arch-specific target (`sm_90a`).
    pub fn is_arch_specific(self) -> bool {
        match self {
            Arch::Sm70 | Arch::Sm80 | Arch::Sm86 | Arch::Sm89 | Arch::Sm90 => false,
            Arch::Sm90a => true,
        }
    }

    /// The name `.target` and `ptxas -arch=` use.
    pub fn name(self) -> TargetName {
        TargetName {
            sm: self.sm(),
            arch_specific: self.is_arch_specific(),
        }
    }

    /// The lowest PTX ISA version whose `.target` accepts this architecture.
    pub fn min_ptx(self) -> PtxVersion {
        min_ptx_for_target(self.name())
    }

    /// The requirement an explicit request for this architecture imposes.
    pub fn requirement(self) -> Requirement {
        Requirement {
            sm: self.sm(),
            ptx: self.min_ptx(),
            arch_specific: self.is_arch_specific(),
        }
    }

    /// Whether code written for this architecture may use an instruction
    /// that `needs` this: its capability is high enough and, for an
    /// arch-specific instruction, this is that capability's arch-specific
    /// target. (The PTX version is raised as needed, never a reason to
    /// refuse.)
    pub fn meets(self, needs: Requirement) -> bool {
        if needs.arch_specific {
            self.is_arch_specific() && self.sm() == needs.sm
        } else {
            self.sm() >= needs.sm
        }
    }
}

impl From<Arch> for TargetName {
    fn from(arch: Arch) -> TargetName {
        arch.name()
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.name().fmt(f)
    }
}

impl FromStr for Arch {
    type Err = PtxError;

    /// Parses `sm_70`, `sm_80`, `sm_86`, `sm_89`, `sm_90` or `sm_90a`.
    fn from_str(text: &str) -> Result<Self, PtxError> {
        Arch::ALL
            .into_iter()
            .find(|arch| arch.to_string() == text)
            .ok_or_else(|| PtxError::BadTarget {
                text: text.to_string(),
                expected: "one of sm_70, sm_80, sm_86, sm_89, sm_90, sm_90a",
            })
    }
}

/// The `.version` and `.target` a module is written with.
///
/// Rule: when `arch_specific`, `.target` is written `sm_XXa`, `ptx` is at
/// least 8.0, and the code runs only on compute capability `sm`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Target {
    /// Written as `.version`.
    pub ptx: PtxVersion,
    /// The capability written as `.target`.
    pub sm: Sm,
    /// Whether `.target` carries the `a` suffix (an instruction used, or
    /// the request, is arch-specific).
    pub arch_specific: bool,
}

impl Target {
    /// What `.target` writes and `ptxas -arch=` takes (`sm_90a`).
    pub fn name(&self) -> TargetName {
        TargetName {
            sm: self.sm,
            arch_specific: self.arch_specific,
        }
    }
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

/// The lowest PTX ISA version that knows `name`: [`min_ptx_for_sm`], and
/// for an arch-specific name at least 8.0, the version that introduced the
/// first of them (`sm_90a`).
pub fn min_ptx_for_target(name: TargetName) -> PtxVersion {
    let plain = min_ptx_for_sm(name.sm);
    if name.arch_specific {
        plain.max(PtxVersion::new(8, 0))
    } else {
        plain
    }
}

/// The granularity of a kernel's shared memory: every shared tensor gets a
/// slice starting at, and reserved to, a multiple of this many bytes — so a
/// swizzled offset may land past a tensor's last element but not past its
/// slice (the checker's E0266 holds a swizzle to the slice).
pub const SHARED_SLICE_BYTES: u32 = 128;

/// The most shared memory one block may use on capability `sm` (opting in
/// to the large carve-out): the one table of these limits. Not monotonic —
/// sm_75 has less than sm_70, sm_86 and sm_89 less than sm_80.
pub fn shared_limit(sm: Sm) -> u64 {
    const KIB: u64 = 1024;
    match sm.0 {
        0..=72 => 96 * KIB,
        73..=75 => 64 * KIB,
        76..=80 => 163 * KIB,
        81..=89 => 99 * KIB,
        _ => 227 * KIB,
    }
}

/// `target` (chosen without a request) raised, when a block's `shared_bytes`
/// exceed its limit, to the lowest requestable architecture at or above it
/// whose limit holds them (so that the default is one `--arch` accepts);
/// unchanged when none does (the lowering reports that, E0302).
pub fn raise_for_shared(target: Target, shared_bytes: u64) -> Target {
    if shared_bytes <= shared_limit(target.sm) {
        return target;
    }
    let fitting = Arch::ALL
        .into_iter()
        .filter(|arch| !arch.is_arch_specific())
        .find(|arch| arch.sm() >= target.sm && shared_limit(arch.sm()) >= shared_bytes);
    match fitting {
        Some(arch) => {
            let name = TargetName {
                sm: arch.sm(),
                arch_specific: target.arch_specific,
            };
            Target {
                ptx: target.ptx.max(arch.min_ptx()).max(min_ptx_for_target(name)),
                sm: arch.sm(),
                arch_specific: target.arch_specific,
            }
        }
        None => target,
    }
}

/// Resolves the target for a set of requirements, each tagged with the name of
/// the instruction that imposes it.
///
/// The result is the floor, raised to every requirement and to `requested`,
/// and arch-specific when an instruction or the request is. Errors, naming
/// the first offending instruction in the order given (so the message is
/// stable), when `requested` does not meet some instruction's requirement,
/// or when an arch-specific instruction shares the module with one needing
/// another capability (arch-specific code runs on its capability alone).
pub fn resolve_target<'a>(
    requirements: impl IntoIterator<Item = (&'a str, Requirement)>,
    requested: Option<Arch>,
) -> Result<Target, PtxError> {
    let requirements: Vec<(&str, Requirement)> = requirements.into_iter().collect();
    if let Some(arch) = requested {
        let unmet = requirements.iter().find(|(_, needs)| !arch.meets(*needs));
        if let Some(&(instruction, needs)) = unmet {
            let instruction = instruction.to_string();
            return Err(if needs.arch_specific {
                PtxError::ArchSpecific {
                    instruction,
                    needs,
                    requested: arch,
                }
            } else {
                PtxError::ArchTooLow {
                    instruction,
                    needs,
                    requested: arch,
                }
            });
        }
    }
    let mut sm = Requirement::FLOOR.sm;
    let mut ptx = Requirement::FLOOR.ptx;
    for (_, needs) in &requirements {
        sm = sm.max(needs.sm);
        ptx = ptx.max(needs.ptx);
    }
    let specific: Vec<&(&str, Requirement)> = requirements
        .iter()
        .filter(|(_, needs)| needs.arch_specific)
        .collect();
    let stranded = specific.iter().find(|(_, needs)| needs.sm != sm);
    let highest = requirements.iter().find(|(_, needs)| needs.sm == sm);
    if let (Some(&&(first, first_needs)), Some(&(other, other_needs))) = (stranded, highest) {
        return Err(PtxError::ArchSpecificConflict {
            first: first.to_string(),
            first_needs,
            other: other.to_string(),
            other_needs,
        });
    }
    // The default target is one `--arch` can name: a requirement between
    // two requestable architectures (ldmatrix's sm_75) rounds up to the
    // next one, so that the PTX a file gets by default is also what some
    // `--arch` gives.
    let requestable = Arch::ALL
        .into_iter()
        .filter(|arch| !arch.is_arch_specific())
        .find(|arch| arch.sm() >= sm);
    if let Some(arch) = requestable {
        sm = arch.sm();
        ptx = ptx.max(arch.min_ptx());
    }
    let mut arch_specific = !specific.is_empty();
    if let Some(arch) = requested {
        sm = sm.max(arch.sm());
        ptx = ptx.max(arch.min_ptx());
        arch_specific |= arch.is_arch_specific();
    }
    let name = TargetName { sm, arch_specific };
    Ok(Target {
        ptx: ptx.max(min_ptx_for_target(name)),
        sm,
        arch_specific,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needs(sm: u32, major: u32, minor: u32) -> Requirement {
        Requirement {
            sm: Sm(sm),
            ptx: PtxVersion::new(major, minor),
            arch_specific: false,
        }
    }

    fn needs_specific(sm: u32, major: u32, minor: u32) -> Requirement {
        Requirement {
            arch_specific: true,
            ..needs(sm, major, minor)
        }
    }

    fn written(target: Target) -> (String, PtxVersion) {
        (target.name().to_string(), target.ptx)
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
        // ldmatrix needs sm_75, which no `--arch` names: the next requestable
        // target, sm_80, and its PTX version.
        assert_eq!(target.sm, Sm(80));
        assert_eq!(target.ptx, PtxVersion::new(7, 0).max(Arch::Sm80.min_ptx()));
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
            assert_eq!(arch.to_string().parse::<TargetName>().unwrap(), arch.name());
        }
        assert_eq!(Arch::Sm90a.to_string(), "sm_90a");
        assert!("sm_75".parse::<Arch>().is_err());
        assert!("sm90".parse::<Arch>().is_err());
        assert!("sm_80a".parse::<Arch>().is_err());
        let message = "sm_90b".parse::<Arch>().unwrap_err().to_string();
        assert!(message.contains("sm_90, sm_90a"), "{message}");
    }

    #[test]
    fn only_sm_90a_is_arch_specific_and_it_needs_ptx_8_0() {
        let specific: Vec<Arch> = Arch::ALL
            .into_iter()
            .filter(|arch| arch.is_arch_specific())
            .collect();
        assert_eq!(specific, [Arch::Sm90a]);
        assert_eq!(Arch::Sm90a.sm(), Sm(90));
        assert_eq!(Arch::Sm90a.min_ptx(), PtxVersion::new(8, 0));
        assert_eq!(Arch::Sm90.min_ptx(), PtxVersion::new(7, 8));
        assert_eq!(
            Arch::Sm90a.requirement().to_string(),
            "sm_90a and PTX ISA 8.0"
        );
    }

    #[test]
    fn an_arch_specific_requirement_is_met_by_its_own_target_alone() {
        let wgmma = needs_specific(90, 8, 0);
        let met: Vec<Arch> = Arch::ALL
            .into_iter()
            .filter(|arch| arch.meets(wgmma))
            .collect();
        assert_eq!(met, [Arch::Sm90a]);
        // sm_90a is a Hopper target: everything sm_90 and below runs there.
        assert!(Arch::Sm90a.meets(needs(90, 7, 8)) && Arch::Sm90a.meets(needs(75, 6, 5)));
        assert!(!Arch::Sm90a.meets(needs(100, 8, 6)));
    }

    #[test]
    fn target_names_say_where_their_code_runs() {
        let sm_90a: TargetName = "sm_90a".parse().unwrap();
        assert_eq!((sm_90a.sm, sm_90a.arch_specific), (Sm(90), true));
        assert!(sm_90a.runs_on(Sm(90)));
        assert!(!sm_90a.runs_on(Sm(100)) && !sm_90a.runs_on(Sm(89)));
        let sm_80: TargetName = "sm_80".parse().unwrap();
        assert!(sm_80.runs_on(Sm(80)) && sm_80.runs_on(Sm(90)) && !sm_80.runs_on(Sm(75)));
        assert_eq!(TargetName::from(Sm(86)).to_string(), "sm_86");
        assert!("sm_9a".parse::<TargetName>().is_err());
        assert!("sm_90aa".parse::<TargetName>().is_err());
    }

    #[test]
    fn an_arch_specific_instruction_makes_the_target_sm_90a_with_ptx_8_0() {
        let used = [
            ("ldmatrix", needs(75, 6, 5)),
            ("wgmma.fence.sync.aligned", needs_specific(90, 8, 0)),
        ];
        let target = resolve_target(used, None).unwrap();
        assert_eq!(written(target), ("sm_90a".into(), PtxVersion::new(8, 0)));
        let target = resolve_target(used, Some(Arch::Sm90a)).unwrap();
        assert_eq!(written(target), ("sm_90a".into(), PtxVersion::new(8, 0)));
    }

    #[test]
    fn requesting_sm_90a_alone_writes_it() {
        let target = resolve_target([("add.u32", needs(70, 6, 0))], Some(Arch::Sm90a)).unwrap();
        assert_eq!(written(target), ("sm_90a".into(), PtxVersion::new(8, 0)));
        let target = resolve_target([("add.u32", needs(70, 6, 0))], Some(Arch::Sm90)).unwrap();
        assert_eq!(written(target), ("sm_90".into(), PtxVersion::new(7, 8)));
    }

    #[test]
    fn any_other_request_for_an_arch_specific_module_names_the_instruction() {
        let used = [
            ("add.u32", needs(70, 6, 0)),
            ("wgmma.commit_group.sync.aligned", needs_specific(90, 8, 0)),
        ];
        for arch in [Arch::Sm70, Arch::Sm80, Arch::Sm86, Arch::Sm89, Arch::Sm90] {
            let error = resolve_target(used, Some(arch)).unwrap_err();
            assert!(
                matches!(&error, PtxError::ArchSpecific { requested, .. } if *requested == arch),
                "{error:?}"
            );
            let message = error.to_string();
            assert!(
                message.contains("`wgmma.commit_group.sync.aligned` exists only on sm_90a"),
                "{message}"
            );
            assert!(
                message.contains(&format!("requested target is {arch};")),
                "{message}"
            );
            assert!(message.contains("compute capability 9.0"), "{message}");
        }
    }

    #[test]
    fn an_arch_specific_instruction_cannot_share_a_module_with_a_later_capability() {
        let used = [
            ("add.u32", needs(70, 6, 0)),
            ("wgmma.fence.sync.aligned", needs_specific(90, 8, 0)),
            ("future.op", needs(100, 8, 6)),
        ];
        let message = resolve_target(used, None).unwrap_err().to_string();
        assert_eq!(
            message,
            "instruction `wgmma.fence.sync.aligned` needs sm_90a and PTX ISA 8.0 and runs only on \
             compute capability 9.0, but `future.op` needs sm_100 and PTX ISA 8.6: no target has both"
        );
        let two_specific = [
            ("later.specific", needs_specific(100, 8, 6)),
            ("wgmma.fence.sync.aligned", needs_specific(90, 8, 0)),
        ];
        let message = resolve_target(two_specific, None).unwrap_err().to_string();
        assert!(
            message.starts_with("instruction `wgmma.fence.sync.aligned`"),
            "{message}"
        );
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

    #[test]
    fn shared_memory_raises_the_default_to_an_arch_whose_limit_holds_it() {
        let floor = resolve_target([], None).unwrap();
        let raised = |bytes| {
            let target = raise_for_shared(floor, bytes);
            (target.sm, target.ptx)
        };
        assert_eq!(raised(96 * 1024), (Sm(70), PtxVersion::new(6, 0)));
        assert_eq!(raised(100_000), (Sm(80), PtxVersion::new(7, 0)));
        assert_eq!(raised(227 * 1024), (Sm(90), PtxVersion::new(7, 8)));
        // More than any target holds: left for the lowering to report.
        assert_eq!(raised(300_000), (Sm(70), PtxVersion::new(6, 0)));
        // ldmatrix's sm_75 is no requestable target: the default is sm_80
        // already, and shared memory raises it from there, never below.
        let ldmatrix = resolve_target([("ldmatrix", needs(75, 6, 5))], None).unwrap();
        assert_eq!(ldmatrix.sm, Sm(80));
        assert_eq!(raise_for_shared(ldmatrix, 70_000).sm, Sm(80));
        assert_eq!(raise_for_shared(ldmatrix, 200_000).sm, Sm(90));
        // sm_86 holds 99 KiB: 150 KB on an sm_86 instruction needs sm_90.
        let sm_86 = resolve_target([("x", needs(86, 7, 1))], None).unwrap();
        assert_eq!(raise_for_shared(sm_86, 150_000).sm, Sm(90));
    }
}
