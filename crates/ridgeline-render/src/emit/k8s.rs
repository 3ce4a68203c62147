//! Kubernetes: a Deployment of `replicas` pods running `vllm serve`, each requesting
//! the replica's devices; a replica larger than a node is a LeaderWorkerSet
//! (`leaderworkerset.x-k8s.io/v1`) of one pod per node joined by Ray.

use super::shell::{quote, yaml_str};
use super::{EmittedFile, Format, Serving, refuse};
use crate::error::Result;

/// The container image of the vLLM version the flags are checked against.
fn image() -> String {
    format!("vllm/vllm-openai:v{}", Format::Vllm.version())
}

/// A Kubernetes object name from a model id (lowercase letters, digits and `-`).
fn object_name(id: &str) -> String {
    let mut n: String = id
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    n = n.trim_matches('-').to_string();
    if n.is_empty() {
        n = "model".into();
    }
    format!("{n}-vllm")
}

/// `k8s.yaml`.
pub(crate) fn emit(s: &Serving) -> Result<Vec<EmittedFile>> {
    let (cmd, notes) = super::vllm::command(s, Format::K8s)?;
    let name = object_name(&s.model.id);
    let mut out = String::new();
    for c in super::header(Format::K8s, &super::serving_summary(s))
        .iter()
        .chain(&notes)
    {
        out.push_str(&format!("# {c}\n"));
    }
    let nodes = s.nodes();
    if nodes <= 1 {
        out.push_str(&deployment(s, &name, &cmd.argv()));
    } else {
        if !s.gpus.is_multiple_of(nodes) {
            return Err(refuse(
                Format::K8s,
                format!(
                    "needs the same devices on every node: {} devices do not split over {} nodes",
                    s.gpus, nodes
                ),
            ));
        }
        out.push_str(&leader_worker_set(s, &name, &cmd.argv(), nodes));
    }
    Ok(vec![EmittedFile {
        name: "k8s.yaml".into(),
        contents: out,
    }])
}

/// A YAML block list of strings at `indent`.
fn list(items: &[String], indent: &str) -> String {
    items
        .iter()
        .map(|i| format!("{indent}- {}\n", yaml_str(i)))
        .collect()
}

/// The shared memory volume NCCL and the engine use.
const SHM_MOUNT: &str =
    "          volumeMounts:\n            - name: dshm\n              mountPath: /dev/shm\n";
const SHM_VOLUME: &str =
    "      volumes:\n        - name: dshm\n          emptyDir:\n            medium: Memory\n";

/// One node per replica: a Deployment.
fn deployment(s: &Serving, name: &str, argv: &[String]) -> String {
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  labels:
    app: {name}
spec:
  replicas: {replicas}
  selector:
    matchLabels:
      app: {name}
  template:
    metadata:
      labels:
        app: {name}
    spec:
      containers:
        - name: vllm
          image: {image}
          command:
{command}          ports:
            - containerPort: 8000
          resources:
            limits:
              nvidia.com/gpu: {gpus}
{SHM_MOUNT}{SHM_VOLUME}",
        replicas = s.replicas,
        image = image(),
        command = list(argv, "            "),
        gpus = s.gpus,
    )
}

/// Several nodes per replica: a LeaderWorkerSet, Ray head on the leader.
fn leader_worker_set(s: &Serving, name: &str, argv: &[String], nodes: u64) -> String {
    let serve = argv.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" ");
    let leader = format!("ray start --head --port=6379 && {serve}");
    let worker = "ray start --address=$(LWS_LEADER_ADDRESS):6379 --block".to_string();
    let per_pod = s.gpus / nodes;
    let pod = |role: &str, script: &str, port: bool| {
        format!(
            "      metadata:
        labels:
          role: {role}
      spec:
        containers:
          - name: vllm-{role}
            image: {image}
            command:
              - \"sh\"
              - \"-c\"
              - {script}
{ports}            resources:
              limits:
                nvidia.com/gpu: {per_pod}
",
            image = image(),
            script = yaml_str(script),
            ports = if port {
                "            ports:\n              - containerPort: 8000\n"
            } else {
                ""
            },
        )
    };
    format!(
        "apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata:
  name: {name}
spec:
  replicas: {replicas}
  leaderWorkerTemplate:
    size: {nodes}
    leaderTemplate:
{leader_pod}    workerTemplate:
{worker_pod}",
        replicas = s.replicas,
        leader_pod = pod("leader", &leader, true),
        worker_pod = pod("worker", &worker, false),
    )
}
