//! Panics of in-process code as data: the message and the location, never a dead hunt.
//!
//! A target that runs in-process (the in-repo compiler, the interpreter, a reference) can
//! panic on a case: that is a `crash` finding of that code, to be saved and minimized like any
//! other, while the hunt goes on. [`catch`] runs a closure and returns its panic as a
//! [`Panic`] with the `file:line` where it happened (which `catch_unwind` alone does not give:
//! the location is only known to the panic hook). The hook installed here records the message
//! and location for a thread inside [`catch`], and stays silent there (a hunt meeting the same
//! panic ten thousand times must not print it ten thousand times); everywhere else it defers
//! to the hook it replaced.

use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe, PanicHookInfo};
use std::sync::Once;

/// A caught panic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Panic {
    /// The panic message (`(no message)` when the payload was not a string).
    pub message: String,
    /// `file:line` where the panic happened, when the hook saw it.
    pub location: Option<String>,
}

impl Panic {
    /// `message at file:line`, or the message alone.
    pub fn describe(&self) -> String {
        match &self.location {
            Some(at) => format!("{} at {at}", self.message),
            None => self.message.clone(),
        }
    }
}

thread_local! {
    /// How many [`catch`] calls the current thread is inside.
    static CATCHING: Cell<usize> = const { Cell::new(0) };
    /// What the hook saw of the current thread's last panic inside [`catch`].
    static SEEN: RefCell<Option<Panic>> = const { RefCell::new(None) };
}

/// Runs `f`; a panic inside it comes back as `Err` with its message and location.
pub fn catch<R>(f: impl FnOnce() -> R) -> Result<R, Panic> {
    install_hook();
    CATCHING.with(|c| c.set(c.get() + 1));
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    CATCHING.with(|c| c.set(c.get().saturating_sub(1)));
    result.map_err(|payload| {
        let seen = SEEN.with(|s| s.borrow_mut().take());
        seen.unwrap_or_else(|| Panic {
            message: payload_text(payload.as_ref()),
            location: None,
        })
    })
}

/// The message of a panic payload.
pub fn payload_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".into()
    }
}

fn install_hook() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info: &PanicHookInfo<'_>| {
            if CATCHING.with(|c| c.get()) > 0 {
                let seen = Panic {
                    message: payload_text(info.payload()),
                    location: info
                        .location()
                        .map(|l| format!("{}:{}", l.file(), l.line())),
                };
                SEEN.with(|s| *s.borrow_mut() = Some(seen));
            } else {
                previous(info);
            }
        }));
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_comes_back_with_its_message_and_location() {
        let line = line!() + 1;
        let caught = catch(|| -> u32 { panic!("index {} out of bounds", 7) });
        let p = caught.unwrap_err();
        assert_eq!(p.message, "index 7 out of bounds");
        assert_eq!(p.location, Some(format!("{}:{line}", file!())));
        assert_eq!(catch(|| 5), Ok(5));
    }

    #[test]
    fn nested_catches_and_non_string_payloads() {
        let outer = catch(|| {
            let inner = catch(|| std::panic::panic_any(42u8));
            assert_eq!(inner.unwrap_err().message, "(no message)");
            panic!("outer")
        });
        assert_eq!(outer.unwrap_err().message, "outer");
    }
}
