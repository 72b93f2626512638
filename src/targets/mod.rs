pub mod puma;
