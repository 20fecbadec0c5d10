//! Replies whose maps keep their fields in the order the docs give (the crate's map values are
//! sorted by field name): a RESP3 map, or the same pairs as a flat array under RESP2, where
//! clients read fields by position.

use std::os::raw::c_long;

use redis_module::{Context, RedisValue};

/// A reply tree.
pub enum Reply {
    Value(RedisValue),
    /// Fields in order.
    Map(Vec<(&'static str, Reply)>),
    List(Vec<Reply>),
}

/// Sends `reply` as the command's reply.
pub fn send(ctx: &Context, reply: &Reply) {
    match reply {
        Reply::Value(value) => {
            ctx.reply(Ok(value.clone()));
        }
        Reply::Map(fields) => {
            if let Some(reply_with_map) = crate::api!(RedisModule_ReplyWithMap) {
                // SAFETY: the context of the running command.
                unsafe { reply_with_map(ctx.ctx, fields.len() as c_long) };
            }
            for (name, value) in fields {
                ctx.reply(Ok(RedisValue::SimpleStringStatic(name)));
                send(ctx, value);
            }
        }
        Reply::List(items) => {
            if let Some(reply_with_array) = crate::api!(RedisModule_ReplyWithArray) {
                // SAFETY: the context of the running command.
                unsafe { reply_with_array(ctx.ctx, items.len() as c_long) };
            }
            for item in items {
                send(ctx, item);
            }
        }
    }
}
