"""Context patterns: lines that are not failures but tell who is who (rank maps, addresses, exit tables).

They are compiled into the same scanner as the catalog, so reading them costs nothing extra per line.
"""

from __future__ import annotations

from catalog.siblings import Volatile
from correlator.hosts_file import HOSTS_FILE_EXAMPLES, HOSTS_FILE_PATTERNS, HOSTS_FILE_PREFILTERS
from correlator.launcher_reports import REPORT_EXAMPLES, REPORT_PATTERNS

# What may stand before a launcher's "key : value" line: indentation and one word (srun's "0:", torchrun's "[0]:"),
# behind a parenthesised node prefix that holds spaces itself: SkyPilot's "(head, rank=0, pid=P) " / "(worker1,
# rank=1, pid=P, ip=A) " in colorama's cyan (skypilot-org/skypilot sky/skylet/executor/slurm.py), Ray's
# "(RayTrainWorker pid=P, ip=A) " (correlator/speakers.py).
_ROW_LEAD = r"^(?:(?:\x1b\[[\d;]*m)?\([^()\n]{1,120}\)(?:\x1b\[[\d;]*m)?[ \t]*)?[ \t]*(?:\S+[ \t]+)?"

CONTEXT_PATTERNS: dict[str, str] = {
    # NCCL INFO comm 0x... rank 3 nranks 8 cudaDev 3 ... (Init START / COMPLETE, ncclCommInitRank), and where NCCL
    # prints it (every format since nvmlDev: NVIDIA/nccl src/init.cc, "%s comm %p rank %d nranks %d cudaDev %d nvmlDev
    # %d busId %lx ..."), the GPU's PCI bus, which the kernel's Xid lines name: one record a line, not one for the
    # numbering and another for the bus (issue 23: a record a rank less)
    "nccl_comm": r"comm 0x[0-9a-fA-F]+ rank (?P<rank>\d+) nranks (?P<nranks>\d+) cudaDev (?P<device>\d+)"
    r"(?: nvmlDev \d+ busId (?P<bus>[0-9a-fA-F]+))?",
    # NCCL INFO Bootstrap : Using eth0:10.1.2.3<0>  /  NET/Socket : Using [0]eth0:10.1.2.3<0> [1]...
    "nccl_using": r"(?:Bootstrap|NET/Socket|NET/IB|NET/OFI) ?: Using (?P<detail>[^\n]{1,400})",
    # NCCL >= 2.19 (src/init.cc): comm 0x... rank 10 nRanks 16 nNodes 2 localRanks 8 localRank 2 MNNVL 0: how many
    # nodes a communicator spans (one node: every local rank is its global rank)
    "nccl_nodes": r"comm 0x[0-9a-fA-F]+ rank (?P<rank>\d+) nRanks (?P<nranks>\d+) nNodes (?P<nodes>\d+) "
    r"localRanks (?P<local_ranks>\d+) localRank (?P<local_rank>\d+)",
    # torchrun's agent after each rendezvous (torch/distributed/elastic/agent/server/api.py, _rendezvous:
    # "[default] Rendezvous complete for workers. Result:" then one "  key=value" line each): its node's group
    # rank, how many nodes, and its workers' local and global ranks, in the same order
    "rdzv_group_rank": _ROW_LEAD + r"group_rank=(?P<group_rank>\d+)[ \t]*$",
    "rdzv_nodes": _ROW_LEAD + r"group_world_size=(?P<nodes>\d+)[ \t]*$",
    "rdzv_local_ranks": _ROW_LEAD + r"local_ranks=\[(?P<ranks>[\d, ]*)\][ \t]*$",
    "rdzv_global_ranks": _ROW_LEAD + r"global_ranks=\[(?P<ranks>[\d, ]*)\][ \t]*$",
    # torchrun's launch configs (torch/distributed/launcher/api.py, "Starting elastic_operator with launch
    # configs:", one "  key : value" line each)
    "launch_nodes": _ROW_LEAD + r"max_nodes[ \t]*: (?P<nodes>\d+)[ \t]*$",
    "launch_nproc": _ROW_LEAD + r"nproc_per_node[ \t]*: (?P<nproc>\d+)[ \t]*$",
    # ProcessGroupNCCL's progress: on a watchdog failure and on a dump signal. A rank that enqueued fewer
    # collectives than the others never joined the one they wait in.
    "pg_status": r"(?:work sequence id: (?P<seq>\d+) PG status: )?[Ll]ast enqueued (?:NCCL )?work: (?P<enqueued>\d+), "
    r"last completed (?:NCCL )?work: (?P<completed>\d+)",
    # ProcessGroupNCCL's constructor, one line a group a process (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp,
    # 2.3 and later: LOG(INFO) << logPrefix() << "ProcessGroupNCCL initialization options: " << "size: " << size
    # << ", global rank: " << globalRank() << ...). logPrefix() is createLogPrefix()'s "[PG ID <local_id_> PG GUID
    # <pg_uid_>(<pg_desc_>) Rank <rank_>] ", rank_ the rank IN THAT GROUP; globalRank() is a function-level static
    # set on its first call, by the default group made first: the process's global rank. The one line that ties a
    # subgroup's rank to the global one (correlator/subgroups.py)
    "pg_init": r"\[PG ID (?P<pg>\d+) PG GUID \S+ Rank (?P<group_rank>\d+)\] ProcessGroupNCCL initialization options: "
    r"size: (?P<size>\d+), global rank: (?P<global_rank>\d+)",
    # TCPStore clients name the store's host when it goes away: remote=[node000]:29500
    "store_remote": r"remote=\[?(?P<host>[^\]\s()]+?)\]?:(?P<port>\d+)\): (?:[Ff]ailed to (?:recv|send)|"
    r"Connection reset by peer|Broken pipe)",
    # NCCL INFO Ring 00 : 2[3d000] -> 3[3e000] / Channel 00/0 : 3[3] -> 0[0] via P2P: the printer's rank first
    # (in its communicator: trusted only for processes no `comm ... rank N nranks M` line maps)
    "nccl_ring": r"NCCL INFO (?:Ring|Channel) \d+(?:/\d+)? : (?P<rank>\d+)\[[0-9a-fA-F]+\] -> \d+\[",
    "nccl_version": r"NCCL version (?P<version>\d+\.\d+\.\d+)",
    # srun -l's task label (SchedMD/slurm src/srun/srun_job.c: "%d: ") before a line with NCCL's header (its host):
    # srun names the node each task ran on in its exit lines ("srun: error: HOST: task N: Exited"), so task N's
    # two names are one host, whatever launcher prefixes (torchrun's [rankN]:) stand between
    "srun_task_host": r"^(?P<task>\d{1,5}): (?:\[\w{1,40}\]:[ \t]?){0,3}(?P<host>[A-Za-z0-9][\w.-]*):\d+:\d+ \[\d+\] "
    r"NCCL INFO (?:Bootstrap|NET/Socket|NET/IB|NET/OFI) ?: Using ",
    # torchrun's failure table rows
    "table_rank": _ROW_LEAD + r"rank[ \t]*: (?P<rank>\d+) \(local_rank: (?P<local_rank>\d+)\)",
    "table_host": _ROW_LEAD + r"host[ \t]*: (?P<host>[\w.-]+)[ \t]*$",
    "table_exit": _ROW_LEAD + r"exitcode[ \t]*: (?P<exit_code>-?\d+) \(pid: (?P<pid>\d+)\)",
    # the header of the table's row for its first failure (errors/__init__.py _MSG_FORMAT_TEMPLATE: "Root Cause (first
    # observed failure):" then the row of ChildFailedError.get_first_failure, the earliest timestamp)
    "table_root": _ROW_LEAD + r"Root Cause \(first observed failure\):[ \t]*$",
    # the row of a worker that wrote no error file (errors/__init__.py: _NOT_AVAILABLE): its table has no
    # traceback, so the cause is not in it (correlator/unexplained.py)
    "table_no_error_file": r"error_file:[ \t]*<N/A>",
    "table_time": _ROW_LEAD + r"time[ \t]*: (?P<detail>20\d\d-\d\d-\d\d[_T ]\d\d:\d\d:\d\d)",
    # the table's closing border (ChildFailedError.format_msg: boarder_delim * width, width at most 60; "=" since
    # torch 1.10, "*" before): a row's re-printed traceback ends there (correlator/table_lines.py)
    "table_rule": _ROW_LEAD + r"(?:={30,60}|\*{30,60})[ \t]*$",
    # MosaicML Composer's launcher (composer/cli/launcher.py; correlator/composer_launcher.py): a rank's output
    # re-printed between "----------Begin global rank R STDOUT|STDERR|logs----------" and its End line, and the
    # ranks it saw end: "Rank R crashed with exit code C." (the first), "Global rank R (PID P) exited with code C"
    "composer_block": r"^-{10}(?P<edge>Begin|End) global rank (?P<rank>\d+) (?:STDOUT|STDERR|logs)-{10}[ \t]*$",
    "composer_crash": r"(?:^|:)Rank (?P<rank>\d+) crashed with exit code (?P<exit_code>-?\d+)\.[ \t]*$",
    "composer_exit": r"(?:^|:)Global rank (?P<rank>\d+) \(PID (?P<pid>\d+)\) exited with code (?P<exit_code>-?\d+)"
    r"[ \t]*$",
    # torchrun agent: one worker failed, the others were told to stop
    "worker_failed": r"failed \(exitcode: (?P<exit_code>-?\d+)\) local_rank: (?P<local_rank>\d+) \(pid: (?P<pid>\d+)\)",
    # torch.multiprocessing.spawn (torch/multiprocessing/spawn.py, ProcessContext.join): once one process failed,
    # "Terminating process %s via signal SIGTERM" for each still alive, in process-index order, then the
    # ProcessExitedException "process %d terminated with signal %s" / "... with exit code %d" naming the failed index
    "worker_sigterm": r"(?:Sending|Terminating) process (?P<pid>\d+) (?:closing|via) signal (?P<signal>SIG[A-Z]+)",
    "spawn_exited": r"ProcessExitedException: process (?P<local_rank>\d+) terminated with "
    r"(?:signal SIG[A-Z0-9]+|exit code -?\d+)",
    # PyTorch Lightning, on every process before init_process_group (Lightning-AI/pytorch-lightning:
    # src/lightning/fabric/utilities/distributed.py _init_dist_connection "Initializing distributed: ...", 1.x
    # pytorch_lightning "initializing ddp: ...", strategies/deepspeed.py "initializing deepspeed distributed: ..."):
    # the global rank this process claims and the world size (correlator/derived.py: duplicates, missing ranks)
    "rank_claim": r"[Ii]nitializing (?:ddp|distributed|deepspeed distributed): GLOBAL_RANK: (?P<rank>\d+), "
    r"MEMBER: \d+/(?P<world>\d+)",
    # NCCL's communicator init (NVIDIA/nccl src/init.cc: "comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx
    # commId 0x%llx - Init START"; the hash of the unique id every member of one communicator shares). Split
    # communicators print parent/color/key before commId and are left out. Two processes starting one commId as
    # the same rank were launched with one rank (correlator/derived.py).
    "nccl_comm_start": r"comm 0x[0-9a-fA-F]+ rank (?P<rank>\d+) nranks (?P<nranks>\d+) cudaDev \d+ nvmlDev \d+ "
    r"busId [0-9a-fA-F]+ commId 0x(?P<comm>[0-9a-fA-F]+) - Init START",
    # DeepSpeed's rank discovery from the launcher's environment, one line per process (deepspeedai/DeepSpeed
    # deepspeed/comm/comm.py: mpi_discovery, patch_aml_env_for_torch_nccl_backend,
    # patch_aws_sm_env_for_torch_nccl_backend); read apart from Lightning's banner, so that one process printing
    # both is never two claims
    "rank_claim_env": r"Discovered (?:MPI|AzureML|AWS SageMaker) settings of world_rank=(?P<rank>\d+), "
    r"local_rank=\d+, world_size=(?P<world>\d+)",
    # A checkpoint save's finish line, paired with its start (pytorch.checkpoint.save_hang) in correlator/derived.py:
    # torchtitan components/checkpoint.py "Finished saving the checkpoint (or staging if async is enabled) in N
    # seconds" (now components/checkpointer/dcp.py "Finished saving|staging the checkpoint in", "Last step
    # checkpoint completed in"), Megatron-LM megatron/training/checkpointing.py "successfully saved checkpoint from
    # iteration N", transformers modeling_utils.py save_pretrained "Model weights saved in" (sharded: "... checkpoint
    # shards. You can find where each parameters has been saved"), DeepSpeed's TorchCheckpointEngine.commit
    # "[Torch] Checkpoint TAG is ready now!" (older releases)
    # Older torchtitan returns from a last-step save before its finish line, having logged "Saving a full (or model
    # only) checkpoint ... at last step, step N.": that save's end cannot be told, so the line stands in for it.
    "ckpt_saved": r"Finished (?:saving|staging) the checkpoint|Last step checkpoint completed in|"
    r"checkpoint (?:in [\w.]+ )?at last step, step \d+\.|"
    r"successfully saved checkpoint from iteration|Model weights saved in |checkpoint shards\. You can find where "
    r"each parameters has been saved|Checkpoint \S+ is ready now!",
    # A training step's progress line, for the steps a failure lost (correlator/impact.py reads the step number from
    # the line's text: no named group, so a speaker's lines fold into its first and its latest, kept.FOLDED_KINDS):
    # torchtitan's metrics logger f"{color.red}step: {step:2}  {color.green}loss: ..." (ANSI colours between the
    # fields unless disabled), Megatron-LM training.py training_log ' iteration {:8d}/{:8d} |', DeepSpeed's
    # engine._report_progress f"step={step}, skipped={self.skipped_steps}, lr=..."
    "train_step": r"(?:\bstep|\x1b\[[\d;]*mstep): *\d+ +(?:\x1b\[[\d;]*m)?loss: |\biteration +\d+/ *\d+ \||"
    r"\bstep=\d+, skipped=\d+, lr=",
    # The NVIDIA driver names a GPU once, before its first Xid (open-gpu-kernel-modules src/nvidia/src/kernel/gpu/rc/
    # kernel_rc.c, bGpuUuidLoggedOnce: "NVRM: GPU at PCI:%04x:%02x:%02x: %s" with the GPU's UUID, then "NVRM: GPU
    # Board Serial Number: %s" when the board has one): what an RMA needs (correlator/gpu_ids.py pairs the two)
    "nvrm_gpu": r"NVRM: GPU at PCI:(?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}): "
    r"(?P<uuid>GPU-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})",
    "nvrm_serial": r"NVRM: GPU Board Serial Number: (?P<serial>[0-9A-Za-z]{4,32})[ \t]*$",
    # Ray prints the dead worker's address in the actor-died report
    # Anything that reads like an error, for the differential view of failures no entry knows.
    "errorish": r"(?i)\b(?:error|fatal|exception|failed|killed|abort(?:ed|ing)?|segmentation fault|core dumped|"
    r"traceback)\b",
    # kubectl describe pod: the node the pod ran on
    "k8s_node": r"^Node:[ \t]+(?P<host>[\w.-]+)(?:/[\d.]+)?[ \t]*$",
    # kube-scheduler's Scheduled event (pkg/scheduler/schedule_one.go: "Successfully assigned %v/%v to %v", the
    # pod's namespace/name and node), in `kubectl describe pod` or `get events`: the node the pod's events are about
    "k8s_assigned": r"Successfully assigned (?P<pod>[\w.-]+/[\w.-]+) to (?P<host>[A-Za-z0-9][\w.-]*)",
    # kubectl get events' table (kubernetes pkg/printers/internalversion/printers.go, printEvent: LAST SEEN, TYPE,
    # REASON, OBJECT as "{kind, lower case}/{name}", MESSAGE; -o wide adds its columns after OBJECT, -A puts the
    # NAMESPACE first): a row about a pod is that pod's, whatever node the file's other rows name
    "k8s_event_pod": r"^(?:[a-z0-9][a-z0-9-]*[ \t]+)?(?:\d+[smhdy][\dsmhdy]*|<unknown>|<invalid>)[ \t]+"
    r"(?:Normal|Warning)[ \t]+\w+[ \t]+pod/(?P<host>[a-z0-9][a-z0-9.-]{0,252})(?=[ \t])",
    # kubectl describe pod: a terminated container's exit status, under "State:" or "Last State:  Terminated"
    # (kubectl pkg/describe/describe.go, describeContainerState: "Exit Code:\t%d"); the file names the pod
    "k8s_exit": r"^[ \t]+Exit Code:[ \t]+(?P<exit_code>\d{1,3})[ \t]*$",
    # kubectl get pods -o wide (kubernetes pkg/printers/internalversion/printers.go, podColumnDefinitions: NAME,
    # READY, STATUS, RESTARTS ("2 (5m ago)" since 1.24), AGE, then -o wide's priority-1 IP, NODE, NOMINATED NODE,
    # READINESS GATES): a pod, its address and the node it ran on (correlator/pod_nodes.py)
    "k8s_pod_row": r"^(?P<pod>[a-z0-9][a-z0-9.-]{0,252})[ \t]+\d+/\d+[ \t]+[\w:/-]+[ \t]+\d+(?: \([^)\n]{1,24}\))?"
    r"[ \t]+\w+[ \t]+(?P<ip>\d{1,3}(?:\.\d{1,3}){3})[ \t]+(?P<host>[a-z0-9][\w.-]*)(?:[ \t]+\S+){0,2}[ \t]*$",
    # and its first line, the pod's name (describe.go describePod: "Name:\t%s"), which the exit is the pod's
    "k8s_pod": r"^Name:[ \t]+(?P<host>[a-z0-9][a-z0-9.-]{0,252})[ \t]*$",
    # DeepSpeed's launcher (deepspeed/launcher/launch.py, main): its node's place, its workers' pids in local-rank
    # order as it starts them and, once one fails, as its sigkill_handler kills them (correlator/deepspeed_pids.py)
    "ds_node": r"\bnnodes=(?P<nodes>\d+), num_local_procs=(?P<nproc>\d+), node_rank=(?P<node_rank>\d+)[ \t]*$",
    "ds_world": r"\bdist_world_size=(?P<world>\d+)[ \t]*$",
    "ds_spawned": r"\bprocess (?P<pid>\d+) spawned with command: ",
    "ds_killing": r"\bKilling subprocess (?P<pid>\d+)[ \t]*$",
    # Horovod's stall inspector (horovod/common/stall_inspector.cc, 0.21 and later): "Missing ranks:", then one
    # "R: [tensor names]" line a missing rank, after the reporter's tag where mpirun --tag-output or horovodrun put
    # one (correlator/stall_reports.py pairs them)
    "hvd_missing_header": r"(?:^|>:)[ \t]*Missing ranks:[ \t]*$",
    "hvd_missing_rank": r"(?:^|>:)[ \t]*(?P<rank>\d{1,5}): \[[^\]\n]*\][ \t]*$",
    # Ray's ActorDiedError names the dead actor on tab-indented lines (python/ray/exceptions.py: "\tpid: ",
    # "\tname: ", "\tnamespace: ", "\tip: {node_ip_address}"), then its error message on the next line
    # Ray Train's worker table (ray/train/_internal/backend_executor.py, _create_rank_world_size_mappings: "- (node_id=
    # {node_id}, ip={node_ip}, pid={pid}) world_rank={i}, local_rank={..}, node_rank={..}"; before 2.10 no node_id):
    # each worker process's rank, by its pid
    "ray_worker_rank": r"- \((?:node_id=[0-9a-f]+, )?ip=(?P<ip>[\d.]+|[0-9a-fA-F:]+), pid=(?P<pid>\d+)\) "
    r"world_rank=(?P<rank>\d+), local_rank=(?P<local_rank>\d+), node_rank=\d+",
    "ray_dead_ip": r"^(?:\([^)\n]*\) )?[ \t]+ip: (?P<host>[\d.]+)[ \t]*$",
    # and the dead actor's process ("\tpid: {cause.pid}", printed before name, namespace and ip when known): with
    # the address, the worker table's pid (correlator/ray_reports.py)
    "ray_dead_pid": r"^(?:\([^)\n]*\) )?[ \t]+pid: (?P<pid>\d+)[ \t]*$",
    # The raylet's report of a worker process that exited (src/ray/raylet/node_manager.cc: "A worker died or was
    # killed while executing a task by an unexpected system error. ... Worker IP address: A Worker port: P Worker PID:
    # N Worker exit type: ..."), and Ray Train's trainer saying which of its workers that was (ray/train/_internal/
    # utils.py check_for_failure: logger.info(f"Worker {failed_actor_rank} has failed.") where ray.get of worker
    # i's call raised RayActorError; backend_executor.py starts worker i's session with world_rank=i). Where the
    # logs hold one of each, the dead pid is that rank (correlator/identity.py). Ray's log deduplication folds
    # several workers' reports into one "[repeated Nx across cluster]" (python/ray/_private/ray_logging): no pid.
    # The address and pid are read only where the words after each follow them: a row of a wrapped report may end
    # inside either (correlator/ray_reports.py).
    "ray_died_pid": r"Worker IP address: (?P<ip>[0-9A-Fa-f.:]+) Worker port: \d+ Worker PID: (?P<pid>\d+) Worker"
    r"(?:.*(?P<repeated>\[repeated \d+x across cluster\]))?",
    "ray_train_failed": r"\bWorker (?P<rank>\d{1,6}) has failed\.[ \t]*$",
    # vLLM's multiprocessing executor (vllm/executor/multiproc_gpu_executor.py) runs rank 0 in the engine's own
    # process and starts one "VllmWorkerProcess" per rank r >= 1 with local_rank=r, on one node; each prefixes its
    # output "(VllmWorkerProcess pid=N) " (multiproc_worker_utils.py, _add_prefix) and sets its device to
    # cuda:{local_rank} (vllm/worker/worker.py, init_device). c10's OOM message names that device ("GPU %d has a
    # total capacity of", c10/cuda/CUDACachingAllocator.cpp): the worker's rank, by its pid
    "vllm_mp_device": r"\(VllmWorkerProcess pid=(?P<pid>\d+)\) [^\n]*?\bGPU (?P<device>\d{1,2}) has a total "
    r"capac(?:i)?ty of",
    # vLLM's model-parallel setup logs, in each worker process, "rank %s in world size %s is assigned as DP rank %s,
    # PP rank %s, TP rank %s, ..." (vllm/distributed/parallel_state.py, initialize_model_parallel) under the process's
    # prefix "({name} pid={pid}) " (vllm/utils _add_prefix: V1's "VllmWorker rank=R", later "Worker", Ray's
    # "RayWorkerWrapper pid=N, ip=A"): that pid's rank (correlator/identity.py)
    "vllm_rank": r"\brank (?P<rank>\d+) in world size (?P<world>\d+) is assigned as DP rank \d+",
    # verl names its worker actors f"{name_prefix}{class}_{pg_idx}:{local_rank}" (verl/single_controller/ray/
    # base.py), numbering ranks placement group by placement group: in the first, the local rank is the rank
    "ray_dead_name": r"^(?:\([^)\n]*\) )?[ \t]+name: \S*Worker\S*_(?P<group>\d+):(?P<local_rank>\d+)[ \t]*$",
    # srun's per-task output files (srun(1) "IO Redirection", SchedMD/slurm src/common/fname.c: %t is the task id,
    # the rank, "%4t" zero-padded), as the job's script launches it: which file is which task's
    # (correlator/task_files.py); the rest of the line says whether srun starts the ranks or a launcher
    **HOSTS_FILE_PATTERNS,  # a hosts file's names of one machine, a hostfile's slots (correlator/hosts_file.py)
    # The mpirun command line, where a launcher echoes it ("$ mpirun -np 64 --hostfile hostfile --map-by node ..."):
    # how ranks are mapped onto the hostfile's hosts (correlator/hostfile.py)
    "mpirun_command": r"\b(?:mpirun|mpiexec|orterun)[ \t]+(?P<args>-[^\n]*)",
    **REPORT_PATTERNS,  # launchers' first-failure reports (correlator/launcher_reports.py)
    "srun_output": r"\bsrun\b[^\n]*?[ \t](?:--output[= \t]|-o[ \t]?)[\"']?(?P<pattern>[^\s\"']*%\d*t[^\s\"']*)[\"']?"
    r"(?P<rest>[^\n]*)",
}

# What the scanning engine looks for instead, where the pattern itself is slow to scan for (see
# catalog.model.Fingerprint.prefilter): each matches wherever its pattern does, so only the candidates widen.
# A torchrun table row's optional leading word after a line-start anchor makes Hyperscan try every line: these
# four alone halved its throughput on NCCL INFO-heavy logs.
CONTEXT_PREFILTERS: dict[str, str] = {
    "table_rank": r"\(local_rank: \d+\)",  # "rank" alone is on every NCCL comm line
    "table_host": r"host[ \t]*: [\w.-]+[ \t]*$",
    "table_exit": r"exitcode[ \t]*: -?\d+ \(pid: \d+\)",
    "table_time": r"time[ \t]*: 20\d\d-\d\d-\d\d[_T ]\d\d:\d\d:\d\d",
    "table_rule": r"(?:={30}|\*{30})[ \t]*$",
    "table_root": r"Root Cause \(first observed failure\):[ \t]*$",
    "rdzv_group_rank": r"group_rank=\d+[ \t]*$",
    "rdzv_nodes": r"group_world_size=\d+[ \t]*$",
    "rdzv_local_ranks": r"local_ranks=\[[\d, ]*\][ \t]*$",
    "rdzv_global_ranks": r"global_ranks=\[[\d, ]*\][ \t]*$",
    "launch_nodes": r"max_nodes[ \t]*: \d+[ \t]*$",
    "launch_nproc": r"nproc_per_node[ \t]*: \d+[ \t]*$",
    "srun_task_host": r"\[\d+\] NCCL INFO (?:Bootstrap|NET/Socket|NET/IB|NET/OFI) ?: Using ",
    # Hyperscan 5.4 dropped Ray's `\tip: ...` line, anchored with an optional prefix, whenever the line before held
    # a UUID (Ray's `\tnamespace: ` line): unanchored, the same database finds it
    "k8s_event_pod": r"(?:Normal|Warning)[ \t]+\w+[ \t]+pod/[a-z0-9]",
    "hvd_missing_rank": r"\d: \[[^\]\n]*\][ \t]*$",
    "ray_dead_ip": r"[ \t]ip: [\d.]+[ \t]*$",
    "ray_dead_pid": r"[ \t]pid: \d+[ \t]*$",
    "vllm_mp_device": r"GPU \d{1,2} has a total capac(?:i)?ty of",
    **HOSTS_FILE_PREFILTERS,
    "ray_dead_name": r"[ \t]name: \S*Worker\S*_\d+:\d+[ \t]*$",
}

# Where lines of a context pattern differ without meaning: the first group's digits, which no capture, speaker or
# time stamp reads. NCCL prints a ring or channel line per channel, 16 to 32 for each communicator a process sets
# up, differing only in the channel's number; at 4,096 ranks they are two lines in three that match anything. The
# matcher confirms one line for all its siblings (Matcher.spans), and a test checks that every sibling reads the
# same as its own line would (tests/unit/test_siblings.py).
CONTEXT_VOLATILE: dict[str, Volatile] = {
    "nccl_ring": Volatile(after=("NCCL INFO Ring ", "NCCL INFO Channel "), before=" : "),
}

# One line each context pattern must find, in its upstream format (the comments above say where each comes from).
# The matcher's self-check scans them with the engine and with `re` (catalog.matcher.Matcher): Hyperscan was seen
# to drop `ray_dead_ip` from the full database, and a pattern it drops on an example is scanned with `re` as well.
CONTEXT_EXAMPLES: dict[str, tuple[str, ...]] = {
    "nccl_comm": ("node01:2301:2388 [3] NCCL INFO comm 0x55d3c8a0 rank 3 nranks 8 cudaDev 3 busId 3e000 - Init "
                  "COMPLETE",
                  "node01:2301:2388 [3] NCCL INFO comm 0x55d3c8a0 rank 3 nranks 8 cudaDev 3 nvmlDev 3 busId 3e000 "
                  "commId 0x9a5e1c7b2d4f6a81 - Init START"),
    "nccl_using": ("node01:2301:2301 [0] NCCL INFO Bootstrap : Using eth0:10.1.2.3<0>",
                   "node01:2301:2301 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; "
                   "OOB eth0:10.1.2.3<0>"),
    "nccl_nodes": ("node01:2301:2388 [2] NCCL INFO comm 0x7f3a9c002f60 rank 10 nRanks 16 nNodes 2 localRanks 8 "
                   "localRank 2 MNNVL 0",),
    "rdzv_group_rank": ("  group_rank=1",),
    "rdzv_nodes": ("  group_world_size=2",),
    "rdzv_local_ranks": ("  local_ranks=[0, 1, 2, 3]",),
    "rdzv_global_ranks": ("  global_ranks=[4, 5, 6, 7]",),
    "launch_nodes": ("  max_nodes       : 4",),
    "launch_nproc": ("  nproc_per_node  : 8",),
    "pg_status": ("[rank2]:[E1203 10:21:07.118 ProcessGroupNCCL.cpp:1834] [PG ID 0 PG GUID 0(default_pg) Rank 2] "
                  "Exception (either an error or timeout) detected by watchdog at work: 41, last enqueued NCCL work: "
                  "41, last completed NCCL work: 40.",),
    "pg_init": ("[I1203 10:02:03.123456789 ProcessGroupNCCL.cpp:946] [PG ID 2 PG GUID 3(TENSOR_MODEL_PARALLEL_GROUP) "
                "Rank 1] ProcessGroupNCCL initialization options: size: 4, global rank: 5, TIMEOUT(ms): 600000, "
                "USE_HIGH_PRIORITY_STREAM: 0, SPLIT_FROM: 0, SPLIT_COLOR: 0, PG Name: 3",
                "[rank5]:[I1203 10:02:03.123456789 ProcessGroupNCCL.cpp:946] [PG ID 0 PG GUID 0(default_pg) Rank 5] "
                "ProcessGroupNCCL initialization options: size: 8, global rank: 5, TIMEOUT(ms): 600000"),
    "store_remote": ("[W1203 10:21:07.118 socket.cpp:464] [c10d] recvValue failed on SocketImpl(fd=3, addr=[node01]"
                     ":41230, remote=[node000]:29500): Failed to recv, got 0 bytes. Connection was likely closed.",
                     "[rank7]:[W908 21:53:58.148746967 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=102, "
                     "addr=[node03]:36787, remote=[node00]:29500): Connection reset by peer",
                     "[W523 21:36:39.228028808 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=170, "
                     "addr=node03:60438, remote=node00:50427): failed to recv, got 0 bytes"),
    "nccl_ring": ("node01:2301:2388 [2] NCCL INFO Channel 00/0 : 2[2] -> 3[3] via P2P/CUMEM",
                  "node01:2301:2388 [2] NCCL INFO Ring 00 : 2[3d000] -> 3[3e000] via P2P/IPC"),
    "nccl_version": ("node01:2301:2301 [0] NCCL INFO NCCL version 2.21.5+cuda12.4",),
    "srun_task_host": ("1: [rank9]:ip-10-0-0-2:48696:48753 [1] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>",
                       "3: gpu-b07:51234:51234 [3] NCCL INFO NET/Socket : Using [0]eth0:10.1.2.7<0>"),
    # the last two behind SkyPilot's node prefixes (sky/skylet/executor/slurm.py), plain and in colorama's cyan
    "composer_block": ("----------Begin global rank 3 STDERR----------", "----------End global rank 3 STDOUT----------",
                       "----------Begin global rank 11 logs----------"),
    "composer_crash": ("ERROR:composer.cli.launcher:Rank 3 crashed with exit code 1.",),
    "composer_exit": ("Global rank 3 (PID 63659) exited with code 1",
                      "ERROR:composer.cli.launcher:Global rank 0 (PID 63656) exited with code -15"),
    "table_rank": ("  rank      : 3 (local_rank: 3)", "(head, rank=0, pid=4840)   rank      : 2 (local_rank: 2)",
                   "\x1b[36m(worker1, rank=1, pid=4296, ip=172.0.211.97)\x1b[0m   rank      : 9 (local_rank: 1)"),
    "table_host": ("  host      : node01", "(worker2, rank=2, pid=51, ip=10.3.7.130)   host      : ip-10-3-7-130"),
    "table_exit": ("  exitcode  : -9 (pid: 2304)",),
    "table_no_error_file": ("  error_file: <N/A>",),
    "table_time": ("  time      : 2026-12-03_10:21:07",),
    "table_root": ("Root Cause (first observed failure):", "01: Root Cause (first observed failure):",
                   "(head, rank=0, pid=4840) Root Cause (first observed failure):"),
    "table_rule": ("=" * 60, "01: " + "=" * 60),
    "worker_failed": ("E1203 10:21:08.412000 2290 torch/distributed/elastic/multiprocessing/api.py:869] failed "
                      "(exitcode: -9) local_rank: 3 (pid: 2304) of binary: /usr/bin/python3",),
    "worker_sigterm": ("W1203 10:21:08.101000 2290 torch/distributed/elastic/multiprocessing/api.py:897] Sending "
                       "process 2301 closing signal SIGTERM",
                       "W0823 21:17:15.940344 140000002725038 torch/multiprocessing/spawn.py:160] Terminating process "
                       "2616716 via signal SIGTERM"),
    "spawn_exited": ("torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGABRT",
                     "torch.multiprocessing.spawn.ProcessExitedException: process 0 terminated with exit code 1"),
    "rank_claim": ("Initializing distributed: GLOBAL_RANK: 5, MEMBER: 6/16",),
    "nccl_comm_start": ("node01:2301:2388 [3] NCCL INFO comm 0x55d3c8a0 rank 3 nranks 8 cudaDev 3 nvmlDev 3 busId "
                        "3e000 commId 0x9a5e1c7b2d4f6a81 - Init START",),
    "rank_claim_env": ("Discovered MPI settings of world_rank=3, local_rank=3, world_size=8, master_addr=10.1.2.3, "
                       "master_port=29500",),
    "ckpt_saved": ("[rank0]:[titan] 2026-12-03 10:21:07,118 - root - INFO - Finished saving the checkpoint (or "
                   "staging if async is enabled)in 4.21 seconds.",),
    "errorish": ("RuntimeError: CUDA error: an illegal memory access was encountered",),
    "train_step": ("[rank0]:[titan] 2026-12-03 10:20:51,004 - root - INFO - step: 1200  loss:  2.8712  memory: "
                   "61.02GiB(77.10%)  tps: 5,210  mfu: 38.20%",
                   "[titan] 2026-12-03 10:20:51,004 - root - INFO - \x1b[31mstep: 12  \x1b[32mloss:  9.8123  "
                   "\x1b[33mmemory: 61.02GiB(77.10%)\x1b[39m",
                   " [2026-12-03 10:20:51] iteration     1200/  500000 | consumed samples:      1228800 | elapsed "
                   "time per iteration (ms): 3412.7 |",
                   "[2026-12-03 10:20:51,004] [INFO] [logging.py:96:log_dist] [Rank 0] step=1200, skipped=0, "
                   "lr=[0.0003], mom=[(0.9, 0.95)]"),
    "nvrm_gpu": ("[ 4254.197816] NVRM: GPU at PCI:0000:5d:00: GPU-f1906b9b-557a-e961-045c-9fe4be3ce012",),
    "nvrm_serial": ("[ 4254.197854] NVRM: GPU Board Serial Number: 1653923026510",),
    "k8s_node": ("Node:             gpu-node-17/10.0.3.17",),
    "k8s_assigned": ("  Normal   Scheduled  9m22s  default-scheduler  Successfully assigned "
                     "default/llama-worker-0-w5psk to gpu-node-17.cluster.internal",),
    "k8s_event_pod": ("11m         Warning   Evicted           pod/llm-pretrain-worker-16          The node was low on "
                      "resource: ephemeral-storage.",
                      "default   2m3s   Normal   Killing   pod/llm-pretrain-worker-3   Stopping container pytorch"),
    "ds_node": ("worker-1: [2024-03-02 10:00:01,510] [INFO] [launch.py:152:main] nnodes=2, num_local_procs=8, "
                "node_rank=1",),
    "ds_world": ("[2024-03-02 10:00:01,530] [INFO] [launch.py:164:main] dist_world_size=16",),
    "ds_spawned": ("[2024-03-02 10:00:01,610] [INFO] [launch.py:256:main] process 51234 spawned with command: "
                   "['/usr/bin/python3', '-u', 'train.py', '--local_rank=0']",),
    "ds_killing": ("worker-1: [2024-03-02 10:46:47,607] [INFO] [launch.py:315:sigkill_handler] Killing subprocess "
                   "51235",),
    "hvd_missing_header": ("Missing ranks:", "Mon Apr 06 07:18:07 2026[1]<stderr>:Missing ranks:"),
    "hvd_missing_rank": ("0: [cond_1/then/_10/cond_1/SGD/PartitionedCall/DistributedSGD_Allreduce/cond/then/_79/"
                         "DistributedSGD_Allreduce/cond/HorovodAllreduce_grads_0]",
                         "[1,3]<stderr>:2: [allreduce.model.layer1.weight, allreduce.model.layer1.bias]"),
    "k8s_exit": ("      Exit Code:    139",),
    "k8s_pod": ("Name:             llm-pretrain-worker-3",),
    "k8s_pod_row": ("trainer-raycluster-x2jxw-gpu-group-worker-vpqmv   1/1     Running   0          3h11m   "
                    "10.12.87.139     gke-train-a3-pool-7b7522b8-b5x0   <none>           <none>",
                    "pt-job-worker-1   0/1     OOMKilled   2 (5m ago)   20m   10.8.0.21   node-7"),
    "ray_worker_rank": ("(TorchTrainer pid=45197, ip=10.76.0.71) - (node_id=4c934ab2f646a578b03cc335586f30b943e811b"
                        "645526a74c50bfca1, ip=10.76.0.71, pid=45450) world_rank=1, local_rank=1, node_rank=0",
                        "(TorchTrainer pid=71127) - (ip=10.216.70.82, pid=75299) world_rank=1, local_rank=1, "
                        "node_rank=0"),
    "ray_dead_ip": ("\tip: 10.16.99.48", "(TaskRunner pid=2301) \tip: 10.16.99.48"),
    "ray_dead_pid": ("\tpid: 88804", "(TaskRunner pid=2301) \tpid: 5231"),
    "ray_died_pid": ("(raylet) A worker died or was killed while executing a task by an unexpected system error. To "
                     "troubleshoot the problem, check the logs for the dead worker. RayTask ID: ffffffffffffffff3fe8 "
                     "Worker ID: fead2dfe78ee Node ID: 201f2cc4bc59 Worker IP address: 10.0.7.57 Worker port: 10046 "
                     "Worker PID: 89513 Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits "
                     "with a connection error code 2. End of file.",),
    "ray_train_failed": ("(TorchTrainer pid=89392) Worker 0 has failed.",),
    "vllm_mp_device": ("(VllmWorkerProcess pid=2421) ERROR 10-14 12:32:47 multiproc_worker_utils.py:233] "
                       "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.88 GiB. GPU 3 has a total "
                       "capacity of 21.96 GiB of which 1.29 GiB is free.",),
    "mpirun_command": ("$ mpirun -np 64 --hostfile hostfile --map-by node --tag-output python train_hvd.py",),
    **HOSTS_FILE_EXAMPLES,
    "srun_output": ("srun --kill-on-bad-exit=1 --output=logs/%x-%j-%t.out python train.py --config cfg.yaml",
                    "srun -o out/task-%4t.log python pretrain.py"),
    "vllm_rank": ("(VllmWorker rank=2 pid=1750693) INFO 12-10 23:46:29 [parallel_state.py:959] rank 2 in world size 8 "
                  "is assigned as DP rank 0, PP rank 0, TP rank 2",),
    **REPORT_EXAMPLES,
    "ray_dead_name": ("\tname: WorkerDict_0:3", "(TaskRunner pid=2301) \tname: ActorRolloutRefWorker_1:2"),
}
