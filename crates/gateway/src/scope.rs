//! Operator scopes. Admin satisfies every scope; write satisfies read.

use serde::{Deserialize, Serialize};

/// One operator scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Scope {
    /// May check the connection and sessions (`ping`, `session.check`).
    #[serde(rename = "operator.read")]
    Read,
    /// May arrange the Control UIs (`ui.command`); implies read.
    #[serde(rename = "operator.write")]
    Write,
    /// May also run commands in the operator terminal; implies write and read.
    #[serde(rename = "operator.admin")]
    Admin,
}

impl Scope {
    /// Every scope, weakest first.
    pub const ALL: [Scope; 3] = [Scope::Read, Scope::Write, Scope::Admin];

    /// The wire name, e.g. `operator.write`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "operator.read",
            Scope::Write => "operator.write",
            Scope::Admin => "operator.admin",
        }
    }

    fn bit(self) -> u8 {
        match self {
            Scope::Read => 1,
            Scope::Write => 2,
            Scope::Admin => 4,
        }
    }
}

/// A set of granted scopes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Scopes(u8);

impl Scopes {
    /// Every scope.
    pub fn all() -> Self {
        Scope::ALL.into_iter().collect()
    }

    /// Whether `scope` itself was granted (no implication; see [`Scopes::satisfies`]).
    pub fn contains(self, scope: Scope) -> bool {
        self.0 & scope.bit() != 0
    }

    /// Whether these scopes allow what `need` guards (admin ⊇ write ⊇ read).
    pub fn satisfies(self, need: Scope) -> bool {
        match need {
            Scope::Admin => self.contains(Scope::Admin),
            Scope::Write => self.contains(Scope::Admin) || self.contains(Scope::Write),
            Scope::Read => self.0 != 0,
        }
    }

    /// The scopes in both sets.
    pub fn intersect(self, other: Scopes) -> Scopes {
        Scopes(self.0 & other.0)
    }

    /// The granted scopes, weakest first.
    pub fn to_vec(self) -> Vec<Scope> {
        Scope::ALL
            .into_iter()
            .filter(|s| self.contains(*s))
            .collect()
    }
}

impl FromIterator<Scope> for Scopes {
    fn from_iter<I: IntoIterator<Item = Scope>>(iter: I) -> Self {
        Scopes(iter.into_iter().fold(0, |acc, s| acc | s.bit()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hierarchy() {
        let read: Scopes = [Scope::Read].into_iter().collect();
        let write: Scopes = [Scope::Write].into_iter().collect();
        let admin: Scopes = [Scope::Admin].into_iter().collect();
        assert!(read.satisfies(Scope::Read));
        assert!(!read.satisfies(Scope::Write));
        assert!(write.satisfies(Scope::Read));
        assert!(!write.satisfies(Scope::Admin));
        assert!(admin.satisfies(Scope::Write) && admin.satisfies(Scope::Read));
        assert!(!Scopes::default().satisfies(Scope::Read));
    }

    #[test]
    fn intersection_keeps_order() {
        let asked: Scopes = [Scope::Admin, Scope::Read].into_iter().collect();
        let granted = asked.intersect(Scopes::all());
        assert_eq!(granted.to_vec(), vec![Scope::Read, Scope::Admin]);
    }
}
