//! The functional multi-core machine: cores, memories, crossbars, the NoC, scheduling.
