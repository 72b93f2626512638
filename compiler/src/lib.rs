//! The channel-wise compiler: conv2d / MVM cases lowered to the PIMSim ISA, with the
//! crossbar export and the io manifest.
