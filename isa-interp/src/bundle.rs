//! The bundle a compiler writes: program, crossbar export and io manifest.
