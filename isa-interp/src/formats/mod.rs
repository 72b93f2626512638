//! Program file formats: pimsim-nn / PIMCOMP-NN JSON (plain, gzip, directory) and our assembly text.
