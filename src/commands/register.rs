//! Registers [`COMMANDS`] with Redis: the command itself, then (where the server has the API)
//! its `COMMAND DOCS` / `COMMAND INFO` metadata, its ACL category, and the `internal` flag for
//! the replicated-effect commands on Redis 8+. Missing APIs are skipped, never a load failure.

use std::ffi::{CStr, CString};
use std::os::raw::c_int;
use std::ptr;

use redis_module::{raw, Context};

use super::table::{ArgDoc, ArgKind, Audience, Command, KeyUse, CALLBACKS, COMMANDS};
use crate::server;

/// The ACL category of the application commands (Redis 7.2+).
pub const ACL_CATEGORY: &CStr = c"dlock";

pub fn register(ctx: &Context) -> Result<(), String> {
    let categories = add_acl_category(ctx);
    let internal = server::may_have_internal_commands();
    for (command, callback) in COMMANDS.iter().zip(CALLBACKS) {
        let name = CString::new(command.name).map_err(|e| e.to_string())?;
        create(ctx, &name, callback, command, internal)?;
        // SAFETY: the load context and a name just registered.
        let handle =
            crate::api!(RedisModule_GetCommand).map(|get| unsafe { get(ctx.ctx, name.as_ptr()) });
        let Some(handle) = handle.filter(|h| !h.is_null()) else {
            continue;
        };
        set_info(handle, command)?;
        if categories {
            set_categories(handle, command)?;
        }
    }
    if COMMANDS.len() > CALLBACKS.len() {
        return Err(format!(
            "{} commands but {} callbacks",
            COMMANDS.len(),
            CALLBACKS.len()
        ));
    }
    Ok(())
}

/// Creates the command; an effect command is first tried as `internal` (Redis 8+), and created
/// without the flag where the server does not know it (older Redis, Valkey).
fn create(
    ctx: &Context,
    name: &CStr,
    callback: super::table::Callback,
    command: &Command,
    internal: bool,
) -> Result<(), String> {
    let create = crate::api!(RedisModule_CreateCommand).ok_or("no RedisModule_CreateCommand")?;
    // A set's keys are found by its key spec (keynum); the legacy triple cannot say "numkeys".
    let key = c_int::from(matches!(
        command.key,
        KeyUse::Read | KeyUse::Update | KeyUse::Delete | KeyUse::Overwrite | KeyUse::Gate
    ));
    let mut attempts = vec![command.flags.to_string()];
    if internal && command.audience == Audience::Effect {
        attempts.insert(0, format!("{} internal", command.flags));
    }
    for flags in attempts {
        let flags = CString::new(flags).map_err(|e| e.to_string())?;
        // SAFETY: the load context, NUL-terminated strings, a static callback.
        let created = unsafe {
            create(
                ctx.ctx,
                name.as_ptr(),
                Some(callback),
                flags.as_ptr(),
                key,
                key,
                key,
            )
        };
        if created == raw::REDISMODULE_OK as c_int {
            return Ok(());
        }
    }
    Err(format!("cannot create command {}", command.name))
}

static INFO_VERSION: raw::RedisModuleCommandInfoVersion = raw::RedisModuleCommandInfoVersion {
    version: 1,
    sizeof_historyentry: std::mem::size_of::<raw::RedisModuleCommandHistoryEntry>(),
    sizeof_keyspec: std::mem::size_of::<raw::RedisModuleCommandKeySpec>(),
    sizeof_arg: std::mem::size_of::<raw::RedisModuleCommandArg>(),
};

/// Summary, since, arity, key spec and arguments (Redis copies all of it).
fn set_info(handle: *mut raw::RedisModuleCommand, command: &Command) -> Result<(), String> {
    let Some(set) = crate::api!(RedisModule_SetCommandInfo) else {
        return Ok(()); // before 7.0: no metadata, the command still works
    };
    let summary = CString::new(command.summary).map_err(|e| e.to_string())?;
    let since = CString::new(command.since).map_err(|e| e.to_string())?;
    let complexity = CString::new(command.complexity).map_err(|e| e.to_string())?;
    let mut key_specs = match command.key {
        KeyUse::None => vec![],
        KeyUse::Gate => vec![key_spec(KeyUse::Update), wrapped_keys_spec()],
        KeyUse::Keys | KeyUse::KeysDelete => vec![keynum_spec(command.key)],
        key => vec![key_spec(key)],
    };
    key_specs.push(zeroed_key_spec());
    let mut args: Vec<raw::RedisModuleCommandArg> = command.args.iter().map(arg).collect();
    args.push(zeroed_arg());
    let info = raw::RedisModuleCommandInfo {
        version: &INFO_VERSION,
        summary: summary.as_ptr(),
        complexity: complexity.as_ptr(),
        since: since.as_ptr(),
        history: ptr::null_mut(),
        tips: ptr::null(),
        arity: command.arity,
        key_specs: key_specs.as_mut_ptr(),
        args: args.as_mut_ptr(),
    };
    // SAFETY: a command of this module; every pointer lives until the call returns and the
    // arrays end with a zeroed entry, as the API requires.
    match unsafe { set(handle, &info) } {
        0 => Ok(()),
        _ => Err(format!("cannot set the metadata of {}", command.name)),
    }
}

fn key_spec(key: KeyUse) -> raw::RedisModuleCommandKeySpec {
    let flags = match key {
        KeyUse::Read => raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_ACCESS,
        KeyUse::Update | KeyUse::Gate | KeyUse::Keys => {
            raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_UPDATE
        }
        KeyUse::Delete | KeyUse::KeysDelete => {
            raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_DELETE
        }
        KeyUse::Overwrite | KeyUse::None => {
            raw::REDISMODULE_CMD_KEY_OW | raw::REDISMODULE_CMD_KEY_UPDATE
        }
    };
    let mut spec = zeroed_key_spec();
    spec.flags = u64::from(flags);
    spec.begin_search_type = raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX;
    spec.bs.index.pos = 1;
    spec.find_keys_type = raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_RANGE;
    spec.fk.range = raw::RedisModuleCommandKeySpec__bindgen_ty_2__bindgen_ty_1 {
        lastkey: 0,
        keystep: 1,
        limit: 0,
    };
    spec
}

/// `numkeys key [key ...]` from argument 1: the count at 1, the keys right after it.
fn keynum_spec(key: KeyUse) -> raw::RedisModuleCommandKeySpec {
    let mut spec = key_spec(key);
    spec.begin_search_type = raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX;
    spec.bs.index.pos = 1;
    spec.find_keys_type = raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_KEYNUM;
    spec.fk.keynum = raw::RedisModuleCommandKeySpec__bindgen_ty_2__bindgen_ty_2 {
        keynumidx: 0,
        firstkey: 1,
        keystep: 1,
    };
    spec
}

/// The keys of a command DLOCK.GUARD wraps: where and which, only the getkeys API can say (the
/// spec is incomplete, so Redis asks it rather than trusting the gate's spec alone).
fn wrapped_keys_spec() -> raw::RedisModuleCommandKeySpec {
    let mut spec = zeroed_key_spec();
    let flags = raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_UPDATE;
    spec.flags = u64::from(
        flags | raw::REDISMODULE_CMD_KEY_INCOMPLETE | raw::REDISMODULE_CMD_KEY_VARIABLE_FLAGS,
    );
    spec.begin_search_type = raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_UNKNOWN;
    spec.find_keys_type = raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_UNKNOWN;
    spec
}

fn arg(doc: &ArgDoc) -> raw::RedisModuleCommandArg {
    let mut arg = zeroed_arg();
    arg.name = doc.name.as_ptr();
    arg.key_spec_index = -1;
    arg.type_ = match doc.kind {
        ArgKind::Key => {
            arg.key_spec_index = 0;
            raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY
        }
        ArgKind::String => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING,
        ArgKind::Integer => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER,
        ArgKind::Flag(token) => {
            arg.token = token.as_ptr();
            arg.flags = raw::REDISMODULE_CMD_ARG_OPTIONAL as c_int;
            raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_PURE_TOKEN
        }
        ArgKind::Keys => {
            arg.key_spec_index = 0;
            arg.flags = raw::REDISMODULE_CMD_ARG_MULTIPLE as c_int;
            raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY
        }
        ArgKind::Text(token) => {
            arg.token = token.as_ptr();
            arg.flags = raw::REDISMODULE_CMD_ARG_OPTIONAL as c_int;
            raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING
        }
        ArgKind::Option(token) => {
            arg.token = token.as_ptr();
            arg.flags = raw::REDISMODULE_CMD_ARG_OPTIONAL as c_int;
            raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER
        }
    };
    arg
}

fn zeroed_key_spec() -> raw::RedisModuleCommandKeySpec {
    // SAFETY: a plain C struct of pointers, integers and unions of integers: all-zero is valid
    // (and is the array terminator the API expects).
    unsafe { std::mem::zeroed() }
}

fn zeroed_arg() -> raw::RedisModuleCommandArg {
    // SAFETY: as above; null pointers and zero integers.
    unsafe { std::mem::zeroed() }
}

/// Adds `@dlock` where the server supports module ACL categories (7.2+).
fn add_acl_category(ctx: &Context) -> bool {
    let Some(add) = crate::api!(RedisModule_AddACLCategory) else {
        return false;
    };
    // SAFETY: the load context and a static name.
    unsafe { add(ctx.ctx, ACL_CATEGORY.as_ptr()) == raw::REDISMODULE_OK as c_int }
}

/// Applications' commands join `@dlock`; the operator escape hatch and the replicated effects
/// join `@dangerous`, so `+@dlock` (or `+@all -@dangerous`) never grants them.
fn set_categories(handle: *mut raw::RedisModuleCommand, command: &Command) -> Result<(), String> {
    let Some(set) = crate::api!(RedisModule_SetCommandACLCategories) else {
        return Ok(());
    };
    let categories = match command.audience {
        Audience::App => ACL_CATEGORY,
        Audience::Operator | Audience::Effect => c"dangerous",
    };
    // SAFETY: a command of this module and a static category list.
    match unsafe { set(handle, categories.as_ptr()) } {
        0 => Ok(()),
        _ => Err(format!("cannot set the ACL categories of {}", command.name)),
    }
}
