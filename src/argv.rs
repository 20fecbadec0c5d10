//! Command arguments as Redis passes them, borrowed for the duration of the call: no vector,
//! no retained copies (the crate's `Vec<RedisString>` costs measurable time per call).

use std::os::raw::c_int;

use redis_module::{raw, Context, RedisResult};

/// One argument of the current command.
#[repr(transparent)]
pub struct Arg(*mut raw::RedisModuleString);

impl Arg {
    pub fn as_bytes(&self) -> &[u8] {
        redis_module::RedisString::string_as_slice(self.0)
    }

    /// The argument as a strict Redis integer (what `INCRBY` accepts), if it is one.
    pub fn integer(&self) -> Option<i64> {
        let mut value = 0;
        let to_ll = unsafe { raw::RedisModule_StringToLongLong? };
        let ok = unsafe { to_ll(self.0, &mut value) } == raw::REDISMODULE_OK as c_int;
        ok.then_some(value)
    }

    pub fn as_ptr(&self) -> *mut raw::RedisModuleString {
        self.0
    }
}

/// A command body: the arguments (name included) in, the reply out.
pub type Handler = fn(&Context, &[Arg]) -> RedisResult;

/// Runs `handler` for a call from Redis and sends its reply.
///
/// # Safety
/// `argv` and `argc` must be what Redis passed to the command callback.
pub unsafe fn dispatch(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    handler: Handler,
) -> c_int {
    let context = Context::new(ctx);
    let args: &[Arg] = if argv.is_null() || argc <= 0 {
        &[]
    } else {
        std::slice::from_raw_parts(argv as *const Arg, argc as usize)
    };
    context.reply(handler(&context, args)) as c_int
}

/// Registers commands: `[name, handler, flags, first key, last key, key step]` each.
#[macro_export]
macro_rules! register_commands {
    ($ctx:expr, [ $([$name:literal, $handler:path, $flags:literal, $first:literal, $last:literal, $step:literal]),* $(,)? ]) => {{
        let mut status = redis_module::Status::Ok;
        $({
            extern "C" fn command(
                ctx: *mut redis_module::raw::RedisModuleCtx,
                argv: *mut *mut redis_module::raw::RedisModuleString,
                argc: std::os::raw::c_int,
            ) -> std::os::raw::c_int {
                unsafe { $crate::argv::dispatch(ctx, argv, argc, $handler) }
            }
            if status == redis_module::Status::Ok {
                status = $crate::argv::create_command($ctx, $name, command, $flags, [$first, $last, $step]);
            }
        })*
        status
    }};
}

/// `RedisModule_CreateCommand`, logging a failure.
pub fn create_command(
    ctx: &Context,
    name: &std::ffi::CStr,
    callback: extern "C" fn(
        *mut raw::RedisModuleCtx,
        *mut *mut raw::RedisModuleString,
        c_int,
    ) -> c_int,
    flags: &std::ffi::CStr,
    [first, last, step]: [c_int; 3],
) -> redis_module::Status {
    let Some(create) = (unsafe { raw::RedisModule_CreateCommand }) else {
        return redis_module::Status::Err;
    };
    let created = unsafe {
        create(
            ctx.ctx,
            name.as_ptr(),
            Some(callback),
            flags.as_ptr(),
            first,
            last,
            step,
        )
    };
    if created == raw::REDISMODULE_OK as c_int {
        redis_module::Status::Ok
    } else {
        ctx.log_warning(&format!("cannot create command {name:?}"));
        redis_module::Status::Err
    }
}
