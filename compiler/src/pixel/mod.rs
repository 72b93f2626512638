//! The pixel-wise lowering, the baseline the channel-wise one is measured against: the
//! original RAPTOR scheme, in which every output pixel is its own step. For each output
//! pixel, every core that holds crossbars gathers that pixel's input patch (its im2col
//! column: the input pixels under the kernel, with the channels its crossbars read) into
//! local memory, runs each crossbar's `mvmul` on the patch, adds the partial sums of each
//! output tile, exchanges them between cores, adds the bias, applies ReLU and stores the
//! pixel.
//!
//! It shares everything that does not depend on how pixels are grouped: the tiling into
//! crossbar matrices ([`crate::tiling`]), their placement on cores ([`crate::mapping`]), the
//! global-memory layout and io manifest ([`crate::gmem`]), the crossbar export
//! ([`crate::export`]) and the register cache ([`crate::emitter`]). It has its own
//! bufferization ([`buffers`]) and instruction generation ([`codegen`]).
//!
//! A baseline, not a straw man: it does what makes sense per pixel and wastes nothing on
//! purpose.
//! - The patch is loaded with one `ld` per contiguous run of input (a whole kernel row when
//!   the core reads every channel and the kernel is not dilated), only for the kernel
//!   positions the core's crossbars use and, with padding skipping, only where they fall on
//!   real input.
//! - Padding skipping and weight skipping work as in the channel-wise lowering (the same
//!   crossbars are kept).
//! - A partial sum that is known to be zero is neither added nor sent: a core with no
//!   crossbar inside the input for a pixel does not send, and an owner whose own crossbars
//!   contributed nothing receives the first partial sum straight into its accumulator.
//! - The classes a core owns have consecutive output channels, so their accumulators and
//!   biases are laid out side by side: one `vvadd` for the bias, one `vrelu` and one `st`
//!   per pixel and core, whatever the number of output tiles.
//!
//! What it does not do, because it would no longer be pixel-wise: hold several pixels'
//! inputs or sums at once (so no input reuse between neighbouring pixels, and one transfer
//! per pixel and contribution). When not even the patch fits local memory, each crossbar's
//! input tile is loaded on its own right before its `mvmul` (*gathering*), as in the
//! channel-wise lowering's last resort.

pub mod buffers;
pub mod codegen;
