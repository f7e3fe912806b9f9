//! Placeholder: the port lands in its own issue.
fn main() {
    eprintln!("usage: hackbench [options] -- not implemented yet");
    std::process::exit(2);
}
