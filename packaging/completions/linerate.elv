
use builtin;
use str;

set edit:completion:arg-completer[linerate] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'linerate'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'linerate'= {
            cand --color 'When to colour the terminal output'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
            cand probe 'Inventory every port with its ceiling chain and findings'
            cand plan 'Compute the ceiling chain of hardware you do not have yet'
            cand doctor 'Explain why a link is slower than its hardware'
            cand mem 'Measure memory bandwidth: copy, read and write'
            cand serve 'Serve tests to bench, doctor and soak clients'
            cand bench 'Measure TCP, UDP, RDMA or latency to a linerate server'
            cand disk 'Measure a disk: throughput, IOPS and latency'
            cand mesh 'Measure every link of a cluster and explain the bad ones'
            cand soak 'Judge a cable by its error counters under steady traffic'
            cand watch 'Show every port live, against its ceiling, errors judged'
            cand generate 'Write the man pages or a shell''s completion script'
            cand setup 'Print or write the configuration that makes links fast'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'linerate;probe'= {
            cand --root 'Read sysfs and procfs under this directory instead of `/` (a copy or a fixture tree)'
            cand --fail-on 'Exit with status 1 when a finding of at least this severity is present'
            cand --color 'When to colour the terminal output'
            cand --json 'Print one JSON document (schemas/probe.schema.json) instead of the terminal view'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'linerate;plan'= {
            cand --link 'The link: `4x-qdr`, `4x-fdr`, `hdr`, `1x-edr`, `10gbe`, `100gbe`, ...'
            cand --pcie 'The PCIe link the card gets: `gen2x4`, `gen3x16`, ... (omit to ignore PCIe)'
            cand --mtu 'MTU of the IP interface, to add the TCP goodput stage'
            cand --ipoib 'IPoIB mode for an InfiniBand link with --mtu (default: connected above 4092, else datagram)'
            cand --mps 'PCIe max payload size in bytes, if you know it (`lspci -vv` as root: DevCtl MaxPayload)'
            cand --color 'When to colour the terminal output'
            cand --json 'Print one JSON object with the ceiling instead of the terminal view'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'linerate;doctor'= {
            cand -p 'Server port [default: 5301, with --iperf3 5201; with --ssh, one the far end''s kernel picks, with --iperf3 the first of 5201-5299 free there]'
            cand --port 'Server port [default: 5301, with --iperf3 5201; with --ssh, one the far end''s kernel picks, with --iperf3 the first of 5201-5299 free there]'
            cand --report 'Also write a self-contained HTML report with charts'
            cand --fail-on 'Exit with status 1 when a finding of at least this severity is present'
            cand -B 'Local address to test from'
            cand --bind 'Local address to test from'
            cand --psk-file 'Pre-shared key file, when the server requires one'
            cand --disk 'A directory whose disk joins the storage pyramid (repeatable; default: the current directory). The first also holds the source of a disk-to-disk copy through the path'
            cand --rdma-provider 'Measure RDMA beside TCP with this libfabric provider (by default doctor does so with `verbs` when this end of the path is an InfiniBand or RoCE port)'
            cand --ssh 'Start a temporary `linerate serve` on SSHHOST through ssh for this run, and end it with the run (default SSHHOST: HOST). Only the start goes through SSH: the tests go straight to HOST, which may be another address of the same machine'
            cand --ssh-command 'With --ssh: the program on SSHHOST, `linerate` (with --iperf3: `iperf3`) by default, looked up on the PATH of a non-interactive shell there; a path starting with `~/` is in the login''s home'
            cand --ssh-copy 'With --ssh: when this linerate copies itself to SSHHOST for the run. auto: when SSHHOST has no `linerate` (or one of an older protocol; not with --ssh-command); always; never. The copy goes over the same ssh session into a private directory (0700) in $XDG_RUNTIME_DIR or the temporary directory (another when that one is noexec), is checked by its SHA-256, and is removed there as soon as its server has started. A far end of another machine or an older glibc is refused, naming both'
            cand --ssh-disk 'With --ssh: the directory on SSHHOST whose disk receives the disk-to-disk copy, in a scratch directory the far end makes there and removes (default: the login directory)'
            cand --color 'When to colour the terminal output'
            cand --iperf3 'The far end is a stock iperf3 server (`iperf3 -s`, 3.1 or later; with --ssh, one started there for the run): its TCP and UDP tests run in iperf3''s protocol; latency, RDMA, the disk-to-disk copy and the far end''s inventory are skipped with the reason, and the verdict is judged from this end only'
            cand --quick 'A shorter plan (about 10 s)'
            cand --thorough 'A longer plan (about a minute): longer runs, reverse multi-stream, bidirectional, UDP latency'
            cand --json 'Print one JSON document (schemas/doctor.schema.json)'
            cand --no-disk 'Leave disks out: memory and network only'
            cand --no-rdma 'Do not measure RDMA'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'linerate;mem'= {
            cand -t 'Seconds per test'
            cand --time 'Seconds per test'
            cand --size 'Bytes per buffer (each thread has two for copy); far larger than the caches'
            cand --threads 'Threads for the all-cores tests (default: every online CPU)'
            cand --color 'When to colour the terminal output'
            cand --json 'Print one JSON document'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'linerate;serve'= {
            cand -p 'TCP port for control and data connections'
            cand --port 'TCP port for control and data connections'
            cand -B 'Address to listen on (`::` for IPv6 and IPv4)'
            cand --bind 'Address to listen on (`::` for IPv6 and IPv4)'
            cand --iperf3-port 'Listen on this port too (e.g. 5201, iperf3''s), for stock iperf3 clients that cannot be told another port; both ports serve both protocols, and take iperf3''s UDP streams'
            cand --max-tests 'Most tests running at once'
            cand --max-streams 'Most streams per test (per direction)'
            cand --max-duration 'Longest test, seconds'
            cand --max-soak-duration 'Longest soak (`linerate soak`), seconds: the one test meant to run long'
            cand --max-udp-bitrate 'Highest UDP rate per stream (e.g. 10G); 0 = no limit'
            cand --max-length 'Largest read/write length a client may ask for'
            cand --max-memory 'Total buffer memory of all running tests'
            cand --psk-file 'Require clients to prove they know the key in this file (challenge-response; the key never crosses the wire)'
            cand --handshake-timeout 'Seconds a new connection has to complete its handshake'
            cand --max-pending 'Most connections in their handshake at once; more are closed immediately'
            cand --max-served 'Exit after serving this many tests'
            cand --exit-after 'Exit this long after starting, tests running or not (`90s`, `10m`, or seconds): the hard deadline of a temporary server'
            cand --write-dir 'Accept file transfers (`bench --file`) into this directory, and nowhere else: names are single path components, existing files are never overwritten, incomplete copies removed. The packaged service''s directory, /var/lib/linerate, is deleted with the copies in it when the package is purged (`dpkg --purge linerate`)'
            cand --scratch-write-dir 'Accept file transfers into a new directory made in PARENT, removed with its contents when the server exits (`--ssh` uses it for doctor''s copy and `bench --file`)'
            cand --max-file-size 'Largest file a client may send (with --write-dir or --scratch-write-dir); 0 = bounded by free space only'
            cand --max-spin 'Latency tests: the longest busy-poll per wait the echo grants a client''s `--spin`, µs; more is capped to it and the client is told; 0 = always block'
            cand --root 'Read the port counters a soak samples under this directory instead of `/` (a copy or a fixture tree; the ethtool statistics are read only from the live system)'
            cand --color 'When to colour the terminal output'
            cand --once 'Exit after serving one test'
            cand --exit-on-stdin-close 'Exit when standard input closes: the lifeline of a server started over ssh (`--ssh`), which then ends with the ssh session however its client ended, even killed'
            cand --psk-stdin 'Read the pre-shared key from the first line of standard input, so it appears in no command line, environment or file (`--ssh` passes a fresh key this way)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'linerate;bench'= {
            cand -p 'Server port [default: 5301, with --iperf3 5201; with --ssh, one the far end''s kernel picks, with --iperf3 the first of 5201-5299 free there]'
            cand --port 'Server port [default: 5301, with --iperf3 5201; with --ssh, one the far end''s kernel picks, with --iperf3 the first of 5201-5299 free there]'
            cand -t 'Seconds to run (default 10; with --file, the time limit of the copy, default 300)'
            cand --time 'Seconds to run (default 10; with --file, the time limit of the copy, default 300)'
            cand -n 'With --iperf3: end the test once this host has sent or received BYTES after -O (K, M, G, T: 1024), instead of after -t'
            cand --bytes 'With --iperf3: end the test once this host has sent or received BYTES after -O (K, M, G, T: 1024), instead of after -t'
            cand -k 'With --iperf3: the same in blocks of -l bytes'
            cand --blockcount 'With --iperf3: the same in blocks of -l bytes'
            cand -P 'Parallel streams, one thread each'
            cand --parallel 'Parallel streams, one thread each'
            cand -O 'Seconds of warm-up to leave out of the totals'
            cand --omit 'Seconds of warm-up to leave out of the totals'
            cand -i 'Seconds between interval reports (0 = none)'
            cand --interval 'Seconds between interval reports (0 = none)'
            cand -l 'Bytes per write (TCP, default 1M for one connection, 256K for 2-8, 128K beyond; the receiver reads up to 1M), per datagram (UDP, default 1400) or per request (latency, default 1)'
            cand --length 'Bytes per write (TCP, default 1M for one connection, 256K for 2-8, 128K beyond; the receiver reads up to 1M), per datagram (UDP, default 1400) or per request (latency, default 1)'
            cand -w 'Socket buffer size to request (SO_SNDBUF/SO_RCVBUF); with --rdma, the number of operations outstanding per queue pair (default 16)'
            cand --window 'Socket buffer size to request (SO_SNDBUF/SO_RCVBUF); with --rdma, the number of operations outstanding per queue pair (default 16)'
            cand -b 'Target rate per stream, bit/s with K/M/G suffix; 0 = as fast as possible (UDP default 1G, TCP default 0)'
            cand --bitrate 'Target rate per stream, bit/s with K/M/G suffix; 0 = as fast as possible (UDP default 1G, TCP default 0)'
            cand -B 'Local address to send from'
            cand --bind 'Local address to send from'
            cand -C 'TCP congestion control algorithm (e.g. cubic, bbr)'
            cand --congestion 'TCP congestion control algorithm (e.g. cubic, bbr)'
            cand -A 'Pin this host''s stream threads to these CPUs, round robin (e.g. 1 or 0,1)'
            cand --affinity 'Pin this host''s stream threads to these CPUs, round robin (e.g. 1 or 0,1)'
            cand --spin 'Latency: poll this many µs for each reply before blocking (both ends), so replies that come quickly cost no scheduler wake-up. Needs idle cores on both hosts; 0 (the default) blocks at once, as netperf and sockperf do'
            cand --test 'The test to run'
            cand --psk-file 'Pre-shared key file, when the server requires one'
            cand --connect-timeout 'Seconds to wait for the server to answer the connection (a firewall that drops the port shows as this time-out)'
            cand --file 'Copy this file to the server''s write directory (`serve --write-dir`): disk → network → disk, with the time of each layer, to tell which one held the copy back'
            cand --file-name 'The name to give the copy on the server (default: SRC''s file name)'
            cand --provider 'libfabric provider: verbs (InfiniBand/RoCE), tcp, ... (default: the first offering RMA)'
            cand --device 'This end''s RDMA device (mlx5_0, rxe0; with the tcp provider, the interface), like perftest''s -d (default: the one carrying the route to HOST). It must carry that route'
            cand --op 'RDMA operation'
            cand --qps 'Queue pairs (connections), each on its own thread'
            cand --ssh 'Start a temporary `linerate serve` on SSHHOST through ssh for this run, and end it with the run (default SSHHOST: HOST). Only the start goes through SSH: the tests go straight to HOST, which may be another address of the same machine'
            cand --ssh-command 'With --ssh: the program on SSHHOST, `linerate` (with --iperf3: `iperf3`) by default, looked up on the PATH of a non-interactive shell there; a path starting with `~/` is in the login''s home'
            cand --ssh-copy 'With --ssh: when this linerate copies itself to SSHHOST for the run. auto: when SSHHOST has no `linerate` (or one of an older protocol; not with --ssh-command); always; never. The copy goes over the same ssh session into a private directory (0700) in $XDG_RUNTIME_DIR or the temporary directory (another when that one is noexec), is checked by its SHA-256, and is removed there as soon as its server has started. A far end of another machine or an older glibc is refused, naming both'
            cand --ssh-disk 'With --ssh and --file: the directory on SSHHOST the copy is written to, in a scratch directory the far end makes there and removes when it ends (default: the login directory)'
            cand --color 'When to colour the terminal output'
            cand --iperf3 'Measure against a stock iperf3 server (`iperf3 -s`, 3.1 or later) in iperf3''s own protocol: TCP or UDP bandwidth tests, this host''s side measured by linerate, the server''s own figures beside'
            cand -R 'Reverse: the server sends, this host receives'
            cand --reverse 'Reverse: the server sends, this host receives'
            cand --bidir 'Both directions at once'
            cand -u 'UDP instead of TCP'
            cand --udp 'UDP instead of TCP'
            cand -4 'IPv4 only'
            cand --version4 'IPv4 only'
            cand -6 'IPv6 only'
            cand --version6 'IPv6 only'
            cand -Z 'Send with sendfile(2) from an in-memory file (no copy from user space)'
            cand --zerocopy 'Send with sendfile(2) from an in-memory file (no copy from user space)'
            cand --latency 'Measure request/response round trips (same as --test tcp_lat, or udp_lat with -u)'
            cand --discard 'TCP: the receiver drops the data in the kernel (recv with MSG_TRUNC) instead of copying it to user space: a diagnostic of how much of the rate the receiving copy costs'
            cand --no-rcvlowat 'TCP: wake the receiver on every arrival, as iperf3''s is, instead of once about 1 ms of data has queued (SO_RCVLOWAT): what a plain application sees, wake-ups included'
            cand -J 'Print one JSON document at the end (schemas/bench.schema.json)'
            cand --json 'Print one JSON document at the end (schemas/bench.schema.json)'
            cand --json-stream 'Print one JSON object per line as events happen'
            cand --no-fsync 'Do not make the copy durable (fsync) on the server before measuring the end'
            cand --remove-after 'Ask the server to delete the copy once measured (for repeated benchmarks)'
            cand --rdma 'RDMA through libfabric (bandwidth; with --latency, latency), negotiated with the server over the control connection'
            cand --sweep 'Every message size from 2 bytes to -l (default 8M) in powers of two, like perftest''s -a'
            cand --verify 'Check every byte of every RDMA message against a pattern (counts mismatches)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'linerate;disk'= {
            cand --size 'Test file size (e.g. 64M, 20G); refused if it does not fit with a 5% margin'
            cand -t 'Seconds per test'
            cand --time 'Seconds per test'
            cand --block 'Block of the sequential tests (a multiple of 4K); random tests use 4K'
            cand --qd 'Operations in flight (io_uring) or threads (sync)'
            cand --tests 'Tests to run, in order'
            cand --engine 'I/O engine: io_uring, a pool of threads doing pread/pwrite, or io_uring when available'
            cand --jobs 'Jobs at once (fio''s numjobs): each a thread with its own ring (or thread pool) and its own region of the test file; figures are per job and in total'
            cand --color 'When to colour the terminal output'
            cand --buffered 'Do not try O_DIRECT: measure through the page cache'
            cand --hipri 'Polled I/O (IORING_SETUP_IOPOLL): needs O_DIRECT and a device with poll queues (NVMe with nvme.poll_queues); refused with the reason elsewhere (tmpfs, virtio)'
            cand --sqpoll 'A kernel thread takes submissions from the ring (IORING_SETUP_SQPOLL); it keeps a CPU busy while the test runs'
            cand --json 'Print one JSON document: {schema_version, tests: [...]}'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'linerate;mesh'= {
            cand --rank 'This process''s rank (0..size); default: from the launcher''s environment'
            cand --size 'How many ranks the run has; default: from the launcher''s environment or --hosts'
            cand --hosts 'The hosts of the run, in rank order, as a Slurm host list (`node[01-16]`)'
            cand --self 'This host''s name in --hosts, when its host name is not'
            cand --coordinator 'Where rank 0''s coordinator listens (HOST or HOST:PORT, default port 5302): rank 0 listens on that port, the others connect to it'
            cand --rendezvous-dir 'A directory every rank sees (NFS, a shared volume) to exchange the coordinator''s address'
            cand --job 'With --rendezvous-dir: the run''s name, the same on every rank and new for each run (default: SLURM_JOB_ID.SLURM_STEP_ID or PMIX_NAMESPACE)'
            cand --bind 'This rank''s data address (default: the local address that routes to the coordinator)'
            cand --data-port 'This rank''s data server port (default: one the kernel picks; the coordinator tells the others)'
            cand --psk-file 'Pre-shared key file: authenticates every rank to the coordinator and to the others'' data servers (challenge-response; the key never crosses the wire). Give every rank the same'
            cand --schedule 'Which links in which round: pairwise (every ordered pair), ring, quick (n/2 links), incast:K (K senders to one receiver) or file:PATH (`<round> <rank-or-host> <rank-or-host>` lines)'
            cand -t 'Seconds each bandwidth test runs (each direction of each link)'
            cand --time 'Seconds each bandwidth test runs (each direction of each link)'
            cand --max-concurrent-pairs 'At most this many flows at once (protects oversubscribed fabrics); default: a whole round'
            cand --provider 'With --rdma: the libfabric provider (verbs, tcp, ...); default: the first that offers RMA'
            cand --csv 'Write the matrix as CSV to FILE (rank 0)'
            cand --report 'Write an HTML report to FILE (rank 0)'
            cand --join-timeout 'Seconds the ranks have to join; the missing ones are then unreachable'
            cand --heartbeat-timeout 'Seconds a rank (or the coordinator) may stay silent before it counts as gone'
            cand --max-ranks 'Rank 0: the most ranks its coordinator admits; a larger --size is refused at start, and so is a join from a rank or size beyond it'
            cand --max-duration 'Data server: the longest test it accepts, seconds (default: serve''s 300, or --time if longer); below --time is refused at start'
            cand --max-tests 'Data server: most tests running at once (default: serve''s 8, or --size if more, so every other rank can send to this one at once)'
            cand --max-memory 'Data server: total buffer memory of all its running tests (as serve''s)'
            cand --color 'When to colour the terminal output'
            cand --rdma 'Run the flows on the RDMA engine (libfabric) instead of TCP'
            cand --json 'Print the final document as JSON on rank 0''s standard output'
            cand --json-stream 'One JSON line per measurement as it happens, on rank 0''s standard output'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'linerate;soak'= {
            cand -p 'The server''s TCP port [default: 5301; with --ssh, one the far end''s kernel picks]'
            cand --port 'The server''s TCP port [default: 5301; with --ssh, one the far end''s kernel picks]'
            cand -t 'How long to soak (`10m`, `90s`, `1h`, or seconds)'
            cand --duration 'How long to soak (`10m`, `90s`, `1h`, or seconds)'
            cand -i 'How often both ends sample their counters (`1s`, `500ms`; at least 100 ms)'
            cand --interval 'How often both ends sample their counters (`1s`, `500ms`; at least 100 ms)'
            cand -P 'TCP streams per direction'
            cand --parallel 'TCP streams per direction'
            cand --rdma-window 'The RDMA traffic''s writes in flight (default 16). On a lossy path without flow control (RoCE without PFC) the transport goes back N on each loss and a large window can stall it; a smaller one keeps it moving, and the soak still judges what the device counted'
            cand --report 'Also write a self-contained HTML report with the timeline to this file'
            cand --textfile 'Also write `linerate_soak.prom` into this directory for node_exporter''s textfile collector (atomically: a temporary file in DIR, then a rename)'
            cand --root 'Read this host''s counters under this directory instead of `/` (a copy or a fixture tree)'
            cand --psk-file 'Pre-shared key file, when the server requires one'
            cand --threshold 'Set a threshold of the judge (repeatable, each at most once): ber, pre_fec_ber, min_bits, rcv_errors_per_bit, port_rcv_errors_per_s, link_error_recovery_per_min, xmit_wait_ticks, dip_fraction, tcp_retrans_fraction or temperature_rise_c. Defaults, ranges and sources: docs/soak.md (Thresholds); the ones set are printed with the verdict and listed in the JSON'
            cand --ssh 'Start a temporary `linerate serve` on SSHHOST through ssh for this run, and end it with the run (default SSHHOST: HOST). Only the start goes through SSH: the tests go straight to HOST, which may be another address of the same machine'
            cand --ssh-command 'With --ssh: the program on SSHHOST, `linerate` (with --iperf3: `iperf3`) by default, looked up on the PATH of a non-interactive shell there; a path starting with `~/` is in the login''s home'
            cand --ssh-copy 'With --ssh: when this linerate copies itself to SSHHOST for the run. auto: when SSHHOST has no `linerate` (or one of an older protocol; not with --ssh-command); always; never. The copy goes over the same ssh session into a private directory (0700) in $XDG_RUNTIME_DIR or the temporary directory (another when that one is noexec), is checked by its SHA-256, and is removed there as soon as its server has started. A far end of another machine or an older glibc is refused, naming both'
            cand --color 'When to colour the terminal output'
            cand --iperf3 'Refused: a soak judges both ends'' port counters, which iperf3''s protocol does not carry; soak against `linerate serve` (--ssh starts one for the run)'
            cand --both-ways 'Traffic both ways at once, so both ends receive (the default)'
            cand --one-way 'Traffic one way only: this host sends, the server receives'
            cand -R 'Traffic one way only: the server sends, this host receives'
            cand --reverse 'Traffic one way only: the server sends, this host receives'
            cand --rdma 'Also run RDMA traffic beside the TCP streams (as `bench --rdma`); automatic when the route to HOST leaves through an InfiniBand or RoCE port'
            cand --no-rdma 'TCP streams only, also on an InfiniBand or RoCE path'
            cand --passive 'Sample the local ports only, without traffic (no BER verdict without traffic)'
            cand --json 'Print one JSON document (schemas/soak.schema.json) instead of the terminal view'
            cand --json-stream 'Print one JSON line per event (schemas/soak-event.schema.json): start, intervals, end'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'linerate;watch'= {
            cand -i 'How often to sample (`1s`, `250ms`; at least 100 ms)'
            cand --interval 'How often to sample (`1s`, `250ms`; at least 100 ms)'
            cand --count 'Stop after N intervals'
            cand --listen 'Serve Prometheus metrics at http://ADDR:PORT/metrics while it runs, and no screen (a port alone listens on 127.0.0.1; give an address to listen elsewhere)'
            cand --max-clients 'With --listen: the most clients served at once; more are answered 503 and closed'
            cand --client-timeout 'With --listen: the time a client has to send its request and read the answer'
            cand --window 'How far back the error counters are judged: soak''s verdict over the last TIME (between half of it and all of it)'
            cand --root 'Read the ports under this directory instead of `/` (a copy or a fixture tree)'
            cand --threshold 'Set a threshold of soak''s judge (repeatable, each at most once): ber, pre_fec_ber, min_bits, rcv_errors_per_bit, port_rcv_errors_per_s, link_error_recovery_per_min, xmit_wait_ticks, dip_fraction, tcp_retrans_fraction or temperature_rise_c (docs/soak.md, Thresholds)'
            cand --color 'When to colour the terminal output'
            cand --json-stream 'One JSON object per interval (schemas/watch-stream.schema.json) instead of the screen'
            cand --plain 'One line per port per interval instead of the screen (what a pipe or a file gets)'
            cand --bytes 'Rates in bytes (GB/s = 10^9 byte/s) instead of bits (Gb/s = 10^9 bit/s)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'linerate;generate'= {
            cand --color 'When to colour the terminal output'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
            cand man 'Write the man pages into a directory'
            cand completions 'Print a shell''s completion script'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'linerate;generate;man'= {
            cand --color 'When to colour the terminal output'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'linerate;generate;completions'= {
            cand --color 'When to colour the terminal output'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'linerate;generate;help'= {
            cand man 'Write the man pages into a directory'
            cand completions 'Print a shell''s completion script'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'linerate;generate;help;man'= {
        }
        &'linerate;generate;help;completions'= {
        }
        &'linerate;generate;help;help'= {
        }
        &'linerate;setup'= {
            cand --iface 'Only this interface'
            cand --renderer 'The network configuration system to edit; auto finds the one in charge of the interface'
            cand --root 'Read and write under this directory instead of `/` (a copy or a fixture tree)'
            cand --rollback 'Restore the files of an earlier --apply, byte for byte'
            cand --rtt-ms 'The round-trip time the TCP buffers are sized for (sysctl), in milliseconds'
            cand --gbps 'The rate the TCP buffers are sized for (sysctl), in Gb/s (10^9 bit/s) [default: the fastest port''s ceiling]; `linerate doctor` quotes it with the round trip it measured'
            cand --nfs-mount 'NFS over RDMA: the server''s export (`server:/export`) for a client''s mount and fstab line'
            cand --roce-priority 'RoCE: the 802.1p priority its traffic is to use, with PFC on it (0-7)'
            cand --roce-dscp 'RoCE: the DSCP its traffic is to carry, mapped to that priority (0-63); rdma_cm''s default ToS carries it with ECN-capable transport (26 → ToS 106)'
            cand --color 'When to colour the terminal output'
            cand --apply 'Write the files (root needed for `/`): backups first, all or nothing'
            cand --restart 'With --apply: also run the restart command of each interface concerned'
            cand --sm-node 'This node runs the subnet manager (opensm): only then does setup plan one'
            cand --json 'Print one JSON document (schemas/setup.schema.json) instead of the terminal view'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'linerate;help'= {
            cand probe 'Inventory every port with its ceiling chain and findings'
            cand plan 'Compute the ceiling chain of hardware you do not have yet'
            cand doctor 'Explain why a link is slower than its hardware'
            cand mem 'Measure memory bandwidth: copy, read and write'
            cand serve 'Serve tests to bench, doctor and soak clients'
            cand bench 'Measure TCP, UDP, RDMA or latency to a linerate server'
            cand disk 'Measure a disk: throughput, IOPS and latency'
            cand mesh 'Measure every link of a cluster and explain the bad ones'
            cand soak 'Judge a cable by its error counters under steady traffic'
            cand watch 'Show every port live, against its ceiling, errors judged'
            cand generate 'Write the man pages or a shell''s completion script'
            cand setup 'Print or write the configuration that makes links fast'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'linerate;help;probe'= {
        }
        &'linerate;help;plan'= {
        }
        &'linerate;help;doctor'= {
        }
        &'linerate;help;mem'= {
        }
        &'linerate;help;serve'= {
        }
        &'linerate;help;bench'= {
        }
        &'linerate;help;disk'= {
        }
        &'linerate;help;mesh'= {
        }
        &'linerate;help;soak'= {
        }
        &'linerate;help;watch'= {
        }
        &'linerate;help;generate'= {
            cand man 'Write the man pages into a directory'
            cand completions 'Print a shell''s completion script'
        }
        &'linerate;help;generate;man'= {
        }
        &'linerate;help;generate;completions'= {
        }
        &'linerate;help;setup'= {
        }
        &'linerate;help;help'= {
        }
    ]
    $completions[$command]
}
