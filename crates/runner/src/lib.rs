//! rollway-runner (under construction).
#![deny(missing_docs)]
