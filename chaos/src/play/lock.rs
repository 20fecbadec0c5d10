//! Scenarios 1-8: five real nodes (the scenario's options on each, the clock shim on node 0
//! for scenario 7, a slow link in front of node 0 for scenario 8), the fault thread, the
//! workers, and what the resource recorded judged.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dlock_client::ReplicaAck;

use crate::checkers::figures::{judge_record, Figures};
use crate::fixture::faults::inject;
use crate::fixture::nodes::{node_builder, Fixture};
use crate::fixture::proxy::{self, Link};
use crate::fixture::resource::Resource;
use crate::scenario::{Fault, Scenario, NODES};
use crate::workloads::connect::{manager, runtime};
use crate::workloads::workers::run_workers;

/// Plays the scenario for `duration`; `shim` the compiled clock shim, if it could be built.
pub fn run(sc: &Scenario, duration: Duration, shim: Option<PathBuf>) -> Figures {
    let offset_dir = tempfile::tempdir().expect("temp dir");
    let offset_file = offset_dir.path().join("clock-offset-ms");
    std::fs::write(&offset_file, "0").expect("offset file");
    let shim_for_node = shim.map(|library| (library, offset_file.clone()));
    let servers: Vec<_> = (0..NODES)
        .map(|i| node_builder(sc.fault, sc.ttl, i, &shim_for_node).start())
        .collect();
    let mut urls: Vec<String> = servers.iter().map(|s| s.url()).collect();
    let runtime = runtime();
    let link = Arc::new(Link::default());
    if sc.fault == Fault::SlowLink {
        let port = runtime
            .block_on(proxy::start(servers[0].port(), link.clone()))
            .expect("start proxy");
        urls[0] = format!("redis://127.0.0.1:{port}/");
    }
    let fixture = Arc::new(Fixture {
        servers: Mutex::new(servers),
        link,
        clock_offset: (sc.fault == Fault::ClockJump).then_some(offset_file),
    });
    let resource = Arc::new(Resource::start());
    let deadline = Instant::now() + duration;
    let faults = {
        let (fixture, fault, ttl) = (fixture.clone(), sc.fault, sc.ttl);
        std::thread::spawn(move || inject(fault, &fixture, ttl, deadline))
    };
    let manager = manager(&urls, ReplicaAck::default());
    runtime.block_on(run_workers(sc, manager, resource.clone(), deadline));
    let _ = faults.join();
    judge_record(&resource.take())
}
