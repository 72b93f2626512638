//! The bodies of the cargo-fuzz targets (placeholder until the pieces they wrap land).

pub fn conv_lowering(_data: &[u8]) {}
pub fn mvm_lowering(_data: &[u8]) {}
pub fn interp(_data: &[u8]) {}
pub fn parse_program(_data: &[u8]) {}
pub fn parse_case(_data: &[u8]) {}
