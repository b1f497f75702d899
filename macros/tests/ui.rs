//! Compile-pass and compile-fail tests of `#[pool::main]` and
//! `#[pool::test]`. The `.stderr` files are the messages users see: review
//! them as a user would. Regenerate with `TRYBUILD=overwrite` after a
//! deliberate change.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
