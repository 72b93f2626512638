//! The PUMA compiler (ASPLOS'19, snapshot c2ef1ac) as a compiler under test: everything on
//! the compiler's side of a hunt except running the programs.
//!
//! A case is a [`PumaNetwork`] drawn from a case seed ([`network_from_seed`]) with its data
//! ([`network_data`]: small integers inside the machine's range). [`driver_input`] writes the
//! two files `puma-driver` (built by `scripts/build-puma.sh`) reads; the driver makes the API
//! calls, compiles and writes the tile and core programs, the MVMU weights and the
//! [`placement`] of inputs and outputs. [`reference`] is the exact answer every known output
//! element must have; [`model_cpp`] writes the network as a standalone C++ program for a
//! saved finding. `docs/puma.md` describes the API's semantics, the formats and the numerics.

pub mod data;
pub mod driver_input;
pub mod generate;
pub mod model_cpp;
pub mod network;
pub mod placement;
pub mod reference;
pub mod tensors;

pub use data::network_data;
pub use generate::{network_from_seed, PumaNetConfig};
pub use network::{PumaNetwork, Shape};
pub use reference::{reference, NumericRange, Reference};
pub use tensors::NetworkData;
