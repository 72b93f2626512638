//! The values instruction operands carry beyond numbers: the operation names of the two ALUs
//! (each with its name table), the MVMU mask of an `mvm`, and float immediates. The
//! instruction tables (`isa`) and the operand kinds (`operand`) both name them.

use std::fmt;

/// Generates an operation-name enum with its name table.
macro_rules! named_ops {
    ($(#[$doc:meta])* $name:ident { $( $(#[$vdoc:meta])* $op:ident $text:literal ),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $( $(#[$vdoc])* $op, )*
        }

        impl $name {
            /// Every operation, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$op),*];

            /// The name a program line quotes.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$op => $text,)*
                }
            }

            pub fn from_name(s: &str) -> Option<$name> {
                match s {
                    $($text => Some($name::$op),)*
                    _ => None,
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

named_ops! {
    /// An operation of the vector ALU (`alu`, `alui`): every name the compiler prints
    /// (codegen.cpp) and the simulator's shift-and-add `sna`. The simulator's ALU
    /// (ima_modules.py `alu`) implements [`AluOp::SIMULATED`]; the machine stops with a fault
    /// on the others.
    AluOp {
        Add "add", Sub "sub", Mul "mul", Div "div", And "and", Or "or", Not "not",
        Eq "eq", Neq "neq", Lt "lt", Leq "leq", Gt "gt", Geq "geq", Min "min", Max "max",
        Mse "mse", Sig "sig", Tanh "tanh", Exp "exp", Log "log", Relu "relu", Relud "relud",
        LogSoftmax "log_softmax", LogSoftmaxd "log_softmaxd", Rndcmp "rndcmp",
        /// `a + (b << imm)`: the simulator's shift-and-add, used inside its MVMU.
        Sna "sna",
    }
}

impl AluOp {
    /// The operations the simulator's ALU has (`alu.options`, ima_modules.py).
    pub const SIMULATED: &'static [AluOp] = &[
        AluOp::Add,
        AluOp::Sub,
        AluOp::Sna,
        AluOp::Mul,
        AluOp::Sig,
        AluOp::Tanh,
        AluOp::Relu,
        AluOp::Max,
    ];

    /// Whether the operation reads its second operand (the compiler's binary operations and
    /// `sna`); unary operations ignore `r2`.
    pub fn is_binary(self) -> bool {
        !matches!(
            self,
            AluOp::Not
                | AluOp::Sig
                | AluOp::Tanh
                | AluOp::Exp
                | AluOp::Log
                | AluOp::Relu
                | AluOp::Relud
                | AluOp::LogSoftmax
                | AluOp::LogSoftmaxd
                | AluOp::Rndcmp
        )
    }

    pub fn is_simulated(self) -> bool {
        AluOp::SIMULATED.contains(&self)
    }
}

named_ops! {
    /// An operation of the integer ALU (`alu_int`, ima_modules.py `alu_int`).
    IntOp { Add "add", Sub "sub", Mul "mul", Div "div", Mod "mod" }
}

/// The MVMUs an `mvm` names: bit `m` for MVMU `m` (the `m`-th character of `['10']`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Mask(pub u8);

impl Mask {
    pub const NONE: Mask = Mask(0);

    pub fn uses(self, mvmu: u32) -> bool {
        mvmu < 8 && self.0 & (1 << mvmu) != 0
    }
}

/// A finite float immediate (`alui`'s), compared by its bits so that instructions are `Eq`.
#[derive(Clone, Copy, Debug)]
pub struct Real(pub f64);

impl PartialEq for Real {
    fn eq(&self, other: &Real) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for Real {}
