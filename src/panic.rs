//! A panic inside a Redis command would take the whole server down: a Rust panic cannot unwind
//! through Redis's C frames, so the process aborts. No input path panics (the tests feed every
//! command garbage and check the log); should one ever slip through, this hook writes what
//! happened to the Redis log first, so the abort is explained.

use std::ffi::CString;

pub fn install_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = format!("dlock panicked, the server will abort: {info}");
        if let (Some(log), Ok(text)) = (
            crate::api!(RedisModule_Log),
            CString::new(message.replace('\0', " ")),
        ) {
            // SAFETY: a null context is allowed (no module name in the line); the format is
            // static and the message NUL-terminated.
            unsafe {
                log(
                    std::ptr::null_mut(),
                    c"warning".as_ptr(),
                    c"%s".as_ptr(),
                    text.as_ptr(),
                )
            };
        }
        previous(info);
    }));
}
