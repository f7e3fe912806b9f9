//! Policy micro-benchmark (filled in with the policy).
fn main() {}
