//! Placeholder: the port lands in its own issue.
fn main() {
    eprintln!("usage: schbench [options] -- not implemented yet");
    std::process::exit(2);
}
