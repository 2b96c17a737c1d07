# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_linerate_global_optspecs
    string join \n color= h/help V/version
end

function __fish_linerate_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_linerate_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_linerate_using_subcommand
    set -l cmd (__fish_linerate_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c linerate -n "__fish_linerate_needs_command" -l color -d 'When to colour the terminal output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c linerate -n "__fish_linerate_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c linerate -n "__fish_linerate_needs_command" -s V -l version -d 'Print version'
complete -c linerate -n "__fish_linerate_needs_command" -f -a "probe" -d 'Inventory every port with its ceiling chain and findings'
complete -c linerate -n "__fish_linerate_needs_command" -f -a "plan" -d 'Compute the ceiling chain of hardware you do not have yet'
complete -c linerate -n "__fish_linerate_needs_command" -f -a "doctor" -d 'Explain why a link is slower than its hardware'
complete -c linerate -n "__fish_linerate_needs_command" -f -a "mem" -d 'Measure memory bandwidth: copy, read and write'
complete -c linerate -n "__fish_linerate_needs_command" -f -a "serve" -d 'Serve tests to bench, doctor and soak clients'
complete -c linerate -n "__fish_linerate_needs_command" -f -a "bench" -d 'Measure TCP, UDP, RDMA or latency to a linerate server'
complete -c linerate -n "__fish_linerate_needs_command" -f -a "disk" -d 'Measure a disk: throughput, IOPS and latency'
complete -c linerate -n "__fish_linerate_needs_command" -f -a "mesh" -d 'Measure every link of a cluster and explain the bad ones'
complete -c linerate -n "__fish_linerate_needs_command" -f -a "soak" -d 'Judge a cable by its error counters under steady traffic'
complete -c linerate -n "__fish_linerate_needs_command" -f -a "watch" -d 'Show every port live, against its ceiling, errors judged'
complete -c linerate -n "__fish_linerate_needs_command" -f -a "generate" -d 'Write the man pages or a shell\'s completion script'
complete -c linerate -n "__fish_linerate_needs_command" -f -a "setup" -d 'Print or write the configuration that makes links fast'
complete -c linerate -n "__fish_linerate_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c linerate -n "__fish_linerate_using_subcommand probe" -l root -d 'Read sysfs and procfs under this directory instead of `/` (a copy or a fixture tree)' -r -F
complete -c linerate -n "__fish_linerate_using_subcommand probe" -l fail-on -d 'Exit with status 1 when a finding of at least this severity is present' -r -f -a "error\t''
warning\t''
info\t''
never\t''"
complete -c linerate -n "__fish_linerate_using_subcommand probe" -l color -d 'When to colour the terminal output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c linerate -n "__fish_linerate_using_subcommand probe" -l json -d 'Print one JSON document (schemas/probe.schema.json) instead of the terminal view'
complete -c linerate -n "__fish_linerate_using_subcommand probe" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c linerate -n "__fish_linerate_using_subcommand probe" -s V -l version -d 'Print version'
complete -c linerate -n "__fish_linerate_using_subcommand plan" -l link -d 'The link: `4x-qdr`, `4x-fdr`, `hdr`, `1x-edr`, `10gbe`, `100gbe`, ...' -r
complete -c linerate -n "__fish_linerate_using_subcommand plan" -l pcie -d 'The PCIe link the card gets: `gen2x4`, `gen3x16`, ... (omit to ignore PCIe)' -r
complete -c linerate -n "__fish_linerate_using_subcommand plan" -l mtu -d 'MTU of the IP interface, to add the TCP goodput stage' -r
complete -c linerate -n "__fish_linerate_using_subcommand plan" -l ipoib -d 'IPoIB mode for an InfiniBand link with --mtu (default: connected above 4092, else datagram)' -r -f -a "connected\t''
datagram\t''"
complete -c linerate -n "__fish_linerate_using_subcommand plan" -l mps -d 'PCIe max payload size in bytes, if you know it (`lspci -vv` as root: DevCtl MaxPayload)' -r -f -a "128\t''
256\t''
512\t''
1024\t''
2048\t''
4096\t''"
complete -c linerate -n "__fish_linerate_using_subcommand plan" -l color -d 'When to colour the terminal output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c linerate -n "__fish_linerate_using_subcommand plan" -l json -d 'Print one JSON object with the ceiling instead of the terminal view'
complete -c linerate -n "__fish_linerate_using_subcommand plan" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c linerate -n "__fish_linerate_using_subcommand plan" -s V -l version -d 'Print version'
complete -c linerate -n "__fish_linerate_using_subcommand doctor" -s p -l port -d 'Server port [default: 5301, with --iperf3 5201; with --ssh, one the far end\'s kernel picks, with --iperf3 the first of 5201-5299 free there]' -r
complete -c linerate -n "__fish_linerate_using_subcommand doctor" -l report -d 'Also write a self-contained HTML report with charts' -r -F
complete -c linerate -n "__fish_linerate_using_subcommand doctor" -l fail-on -d 'Exit with status 1 when a finding of at least this severity is present' -r -f -a "error\t''
warning\t''
info\t''
never\t''"
complete -c linerate -n "__fish_linerate_using_subcommand doctor" -s B -l bind -d 'Local address to test from' -r
complete -c linerate -n "__fish_linerate_using_subcommand doctor" -l psk-file -d 'Pre-shared key file, when the server requires one' -r -F
complete -c linerate -n "__fish_linerate_using_subcommand doctor" -l disk -d 'A directory whose disk joins the storage pyramid (repeatable; default: the current directory). The first also holds the source of a disk-to-disk copy through the path' -r -F
complete -c linerate -n "__fish_linerate_using_subcommand doctor" -l rdma-provider -d 'Measure RDMA beside TCP with this libfabric provider (by default doctor does so with `verbs` when this end of the path is an InfiniBand or RoCE port)' -r
complete -c linerate -n "__fish_linerate_using_subcommand doctor" -l ssh -d 'Start a temporary `linerate serve` on SSHHOST through ssh for this run, and end it with the run (default SSHHOST: HOST). Only the start goes through SSH: the tests go straight to HOST, which may be another address of the same machine' -r
complete -c linerate -n "__fish_linerate_using_subcommand doctor" -l ssh-command -d 'With --ssh: the program on SSHHOST, `linerate` (with --iperf3: `iperf3`) by default, looked up on the PATH of a non-interactive shell there; a path starting with `~/` is in the login\'s home' -r
complete -c linerate -n "__fish_linerate_using_subcommand doctor" -l ssh-copy -d 'With --ssh: when this linerate copies itself to SSHHOST for the run. auto: when SSHHOST has no `linerate` (or one of an older protocol; not with --ssh-command); always; never. The copy goes over the same ssh session into a private directory (0700) in $XDG_RUNTIME_DIR or the temporary directory (another when that one is noexec), is checked by its SHA-256, and is removed there as soon as its server has started. A far end of another machine or an older glibc is refused, naming both' -r -f -a "never\t''
auto\t''
always\t''"
complete -c linerate -n "__fish_linerate_using_subcommand doctor" -l ssh-disk -d 'With --ssh: the directory on SSHHOST whose disk receives the disk-to-disk copy, in a scratch directory the far end makes there and removes (default: the login directory)' -r
complete -c linerate -n "__fish_linerate_using_subcommand doctor" -l color -d 'When to colour the terminal output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c linerate -n "__fish_linerate_using_subcommand doctor" -l iperf3 -d 'The far end is a stock iperf3 server (`iperf3 -s`, 3.1 or later; with --ssh, one started there for the run): its TCP and UDP tests run in iperf3\'s protocol; latency, RDMA, the disk-to-disk copy and the far end\'s inventory are skipped with the reason, and the verdict is judged from this end only'
complete -c linerate -n "__fish_linerate_using_subcommand doctor" -l quick -d 'A shorter plan (about 10 s)'
complete -c linerate -n "__fish_linerate_using_subcommand doctor" -l thorough -d 'A longer plan (about a minute): longer runs, reverse multi-stream, bidirectional, UDP latency'
complete -c linerate -n "__fish_linerate_using_subcommand doctor" -l json -d 'Print one JSON document (schemas/doctor.schema.json)'
complete -c linerate -n "__fish_linerate_using_subcommand doctor" -l no-disk -d 'Leave disks out: memory and network only'
complete -c linerate -n "__fish_linerate_using_subcommand doctor" -l no-rdma -d 'Do not measure RDMA'
complete -c linerate -n "__fish_linerate_using_subcommand doctor" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c linerate -n "__fish_linerate_using_subcommand doctor" -s V -l version -d 'Print version'
complete -c linerate -n "__fish_linerate_using_subcommand mem" -s t -l time -d 'Seconds per test' -r
complete -c linerate -n "__fish_linerate_using_subcommand mem" -l size -d 'Bytes per buffer (each thread has two for copy); far larger than the caches' -r
complete -c linerate -n "__fish_linerate_using_subcommand mem" -l threads -d 'Threads for the all-cores tests (default: every online CPU)' -r
complete -c linerate -n "__fish_linerate_using_subcommand mem" -l color -d 'When to colour the terminal output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c linerate -n "__fish_linerate_using_subcommand mem" -l json -d 'Print one JSON document'
complete -c linerate -n "__fish_linerate_using_subcommand mem" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c linerate -n "__fish_linerate_using_subcommand mem" -s V -l version -d 'Print version'
complete -c linerate -n "__fish_linerate_using_subcommand serve" -s p -l port -d 'TCP port for control and data connections' -r
complete -c linerate -n "__fish_linerate_using_subcommand serve" -s B -l bind -d 'Address to listen on (`::` for IPv6 and IPv4)' -r
complete -c linerate -n "__fish_linerate_using_subcommand serve" -l iperf3-port -d 'Listen on this port too (e.g. 5201, iperf3\'s), for stock iperf3 clients that cannot be told another port; both ports serve both protocols, and take iperf3\'s UDP streams' -r
complete -c linerate -n "__fish_linerate_using_subcommand serve" -l max-tests -d 'Most tests running at once' -r
complete -c linerate -n "__fish_linerate_using_subcommand serve" -l max-streams -d 'Most streams per test (per direction)' -r
complete -c linerate -n "__fish_linerate_using_subcommand serve" -l max-duration -d 'Longest test, seconds' -r
complete -c linerate -n "__fish_linerate_using_subcommand serve" -l max-soak-duration -d 'Longest soak (`linerate soak`), seconds: the one test meant to run long' -r
complete -c linerate -n "__fish_linerate_using_subcommand serve" -l max-udp-bitrate -d 'Highest UDP rate per stream (e.g. 10G); 0 = no limit' -r
complete -c linerate -n "__fish_linerate_using_subcommand serve" -l max-length -d 'Largest read/write length a client may ask for' -r
complete -c linerate -n "__fish_linerate_using_subcommand serve" -l max-memory -d 'Total buffer memory of all running tests' -r
complete -c linerate -n "__fish_linerate_using_subcommand serve" -l psk-file -d 'Require clients to prove they know the key in this file (challenge-response; the key never crosses the wire)' -r -F
complete -c linerate -n "__fish_linerate_using_subcommand serve" -l handshake-timeout -d 'Seconds a new connection has to complete its handshake' -r
complete -c linerate -n "__fish_linerate_using_subcommand serve" -l max-pending -d 'Most connections in their handshake at once; more are closed immediately' -r
complete -c linerate -n "__fish_linerate_using_subcommand serve" -l max-served -d 'Exit after serving this many tests' -r
complete -c linerate -n "__fish_linerate_using_subcommand serve" -l exit-after -d 'Exit this long after starting, tests running or not (`90s`, `10m`, or seconds): the hard deadline of a temporary server' -r
complete -c linerate -n "__fish_linerate_using_subcommand serve" -l write-dir -d 'Accept file transfers (`bench --file`) into this directory, and nowhere else: names are single path components, existing files are never overwritten, incomplete copies removed. The packaged service\'s directory, /var/lib/linerate, is deleted with the copies in it when the package is purged (`dpkg --purge linerate`)' -r -F
complete -c linerate -n "__fish_linerate_using_subcommand serve" -l scratch-write-dir -d 'Accept file transfers into a new directory made in PARENT, removed with its contents when the server exits (`--ssh` uses it for doctor\'s copy and `bench --file`)' -r -F
complete -c linerate -n "__fish_linerate_using_subcommand serve" -l max-file-size -d 'Largest file a client may send (with --write-dir or --scratch-write-dir); 0 = bounded by free space only' -r
complete -c linerate -n "__fish_linerate_using_subcommand serve" -l max-spin -d 'Latency tests: the longest busy-poll per wait the echo grants a client\'s `--spin`, µs; more is capped to it and the client is told; 0 = always block' -r
complete -c linerate -n "__fish_linerate_using_subcommand serve" -l root -d 'Read the port counters a soak samples under this directory instead of `/` (a copy or a fixture tree; the ethtool statistics are read only from the live system)' -r -F
complete -c linerate -n "__fish_linerate_using_subcommand serve" -l color -d 'When to colour the terminal output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c linerate -n "__fish_linerate_using_subcommand serve" -l once -d 'Exit after serving one test'
complete -c linerate -n "__fish_linerate_using_subcommand serve" -l exit-on-stdin-close -d 'Exit when standard input closes: the lifeline of a server started over ssh (`--ssh`), which then ends with the ssh session however its client ended, even killed'
complete -c linerate -n "__fish_linerate_using_subcommand serve" -l psk-stdin -d 'Read the pre-shared key from the first line of standard input, so it appears in no command line, environment or file (`--ssh` passes a fresh key this way)'
complete -c linerate -n "__fish_linerate_using_subcommand serve" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c linerate -n "__fish_linerate_using_subcommand serve" -s V -l version -d 'Print version'
complete -c linerate -n "__fish_linerate_using_subcommand bench" -s p -l port -d 'Server port [default: 5301, with --iperf3 5201; with --ssh, one the far end\'s kernel picks, with --iperf3 the first of 5201-5299 free there]' -r
complete -c linerate -n "__fish_linerate_using_subcommand bench" -s t -l time -d 'Seconds to run (default 10; with --file, the time limit of the copy, default 300)' -r
complete -c linerate -n "__fish_linerate_using_subcommand bench" -s n -l bytes -d 'With --iperf3: end the test once this host has sent or received BYTES after -O (K, M, G, T: 1024), instead of after -t' -r
complete -c linerate -n "__fish_linerate_using_subcommand bench" -s k -l blockcount -d 'With --iperf3: the same in blocks of -l bytes' -r
complete -c linerate -n "__fish_linerate_using_subcommand bench" -s P -l parallel -d 'Parallel streams, one thread each' -r
complete -c linerate -n "__fish_linerate_using_subcommand bench" -s O -l omit -d 'Seconds of warm-up to leave out of the totals' -r
complete -c linerate -n "__fish_linerate_using_subcommand bench" -s i -l interval -d 'Seconds between interval reports (0 = none)' -r
complete -c linerate -n "__fish_linerate_using_subcommand bench" -s l -l length -d 'Bytes per write (TCP, default 1M for one connection, 256K for 2-8, 128K beyond; the receiver reads up to 1M), per datagram (UDP, default 1400) or per request (latency, default 1)' -r
complete -c linerate -n "__fish_linerate_using_subcommand bench" -s w -l window -d 'Socket buffer size to request (SO_SNDBUF/SO_RCVBUF); with --rdma, the number of operations outstanding per queue pair (default 16)' -r
complete -c linerate -n "__fish_linerate_using_subcommand bench" -s b -l bitrate -d 'Target rate per stream, bit/s with K/M/G suffix; 0 = as fast as possible (UDP default 1G, TCP default 0)' -r
complete -c linerate -n "__fish_linerate_using_subcommand bench" -s B -l bind -d 'Local address to send from' -r
complete -c linerate -n "__fish_linerate_using_subcommand bench" -s C -l congestion -d 'TCP congestion control algorithm (e.g. cubic, bbr)' -r
complete -c linerate -n "__fish_linerate_using_subcommand bench" -s A -l affinity -d 'Pin this host\'s stream threads to these CPUs, round robin (e.g. 1 or 0,1)' -r
complete -c linerate -n "__fish_linerate_using_subcommand bench" -l spin -d 'Latency: poll this many µs for each reply before blocking (both ends), so replies that come quickly cost no scheduler wake-up. Needs idle cores on both hosts; 0 (the default) blocks at once, as netperf and sockperf do' -r
complete -c linerate -n "__fish_linerate_using_subcommand bench" -l test -d 'The test to run' -r -f -a "tcp-bw\t''
udp-bw\t''
tcp-lat\t''
udp-lat\t''
tcp-crr\t''"
complete -c linerate -n "__fish_linerate_using_subcommand bench" -l psk-file -d 'Pre-shared key file, when the server requires one' -r -F
complete -c linerate -n "__fish_linerate_using_subcommand bench" -l connect-timeout -d 'Seconds to wait for the server to answer the connection (a firewall that drops the port shows as this time-out)' -r
complete -c linerate -n "__fish_linerate_using_subcommand bench" -l file -d 'Copy this file to the server\'s write directory (`serve --write-dir`): disk → network → disk, with the time of each layer, to tell which one held the copy back' -r -F
complete -c linerate -n "__fish_linerate_using_subcommand bench" -l file-name -d 'The name to give the copy on the server (default: SRC\'s file name)' -r
complete -c linerate -n "__fish_linerate_using_subcommand bench" -l provider -d 'libfabric provider: verbs (InfiniBand/RoCE), tcp, ... (default: the first offering RMA)' -r
complete -c linerate -n "__fish_linerate_using_subcommand bench" -l device -d 'This end\'s RDMA device (mlx5_0, rxe0; with the tcp provider, the interface), like perftest\'s -d (default: the one carrying the route to HOST). It must carry that route' -r
complete -c linerate -n "__fish_linerate_using_subcommand bench" -l op -d 'RDMA operation' -r -f -a "write\t''
read\t''
send\t''"
complete -c linerate -n "__fish_linerate_using_subcommand bench" -l qps -d 'Queue pairs (connections), each on its own thread' -r
complete -c linerate -n "__fish_linerate_using_subcommand bench" -l ssh -d 'Start a temporary `linerate serve` on SSHHOST through ssh for this run, and end it with the run (default SSHHOST: HOST). Only the start goes through SSH: the tests go straight to HOST, which may be another address of the same machine' -r
complete -c linerate -n "__fish_linerate_using_subcommand bench" -l ssh-command -d 'With --ssh: the program on SSHHOST, `linerate` (with --iperf3: `iperf3`) by default, looked up on the PATH of a non-interactive shell there; a path starting with `~/` is in the login\'s home' -r
complete -c linerate -n "__fish_linerate_using_subcommand bench" -l ssh-copy -d 'With --ssh: when this linerate copies itself to SSHHOST for the run. auto: when SSHHOST has no `linerate` (or one of an older protocol; not with --ssh-command); always; never. The copy goes over the same ssh session into a private directory (0700) in $XDG_RUNTIME_DIR or the temporary directory (another when that one is noexec), is checked by its SHA-256, and is removed there as soon as its server has started. A far end of another machine or an older glibc is refused, naming both' -r -f -a "never\t''
auto\t''
always\t''"
complete -c linerate -n "__fish_linerate_using_subcommand bench" -l ssh-disk -d 'With --ssh and --file: the directory on SSHHOST the copy is written to, in a scratch directory the far end makes there and removes when it ends (default: the login directory)' -r
complete -c linerate -n "__fish_linerate_using_subcommand bench" -l color -d 'When to colour the terminal output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c linerate -n "__fish_linerate_using_subcommand bench" -l iperf3 -d 'Measure against a stock iperf3 server (`iperf3 -s`, 3.1 or later) in iperf3\'s own protocol: TCP or UDP bandwidth tests, this host\'s side measured by linerate, the server\'s own figures beside'
complete -c linerate -n "__fish_linerate_using_subcommand bench" -s R -l reverse -d 'Reverse: the server sends, this host receives'
complete -c linerate -n "__fish_linerate_using_subcommand bench" -l bidir -d 'Both directions at once'
complete -c linerate -n "__fish_linerate_using_subcommand bench" -s u -l udp -d 'UDP instead of TCP'
complete -c linerate -n "__fish_linerate_using_subcommand bench" -s 4 -l version4 -d 'IPv4 only'
complete -c linerate -n "__fish_linerate_using_subcommand bench" -s 6 -l version6 -d 'IPv6 only'
complete -c linerate -n "__fish_linerate_using_subcommand bench" -s Z -l zerocopy -d 'Send with sendfile(2) from an in-memory file (no copy from user space)'
complete -c linerate -n "__fish_linerate_using_subcommand bench" -l latency -d 'Measure request/response round trips (same as --test tcp_lat, or udp_lat with -u)'
complete -c linerate -n "__fish_linerate_using_subcommand bench" -l discard -d 'TCP: the receiver drops the data in the kernel (recv with MSG_TRUNC) instead of copying it to user space: a diagnostic of how much of the rate the receiving copy costs'
complete -c linerate -n "__fish_linerate_using_subcommand bench" -l no-rcvlowat -d 'TCP: wake the receiver on every arrival, as iperf3\'s is, instead of once about 1 ms of data has queued (SO_RCVLOWAT): what a plain application sees, wake-ups included'
complete -c linerate -n "__fish_linerate_using_subcommand bench" -s J -l json -d 'Print one JSON document at the end (schemas/bench.schema.json)'
complete -c linerate -n "__fish_linerate_using_subcommand bench" -l json-stream -d 'Print one JSON object per line as events happen'
complete -c linerate -n "__fish_linerate_using_subcommand bench" -l no-fsync -d 'Do not make the copy durable (fsync) on the server before measuring the end'
complete -c linerate -n "__fish_linerate_using_subcommand bench" -l remove-after -d 'Ask the server to delete the copy once measured (for repeated benchmarks)'
complete -c linerate -n "__fish_linerate_using_subcommand bench" -l rdma -d 'RDMA through libfabric (bandwidth; with --latency, latency), negotiated with the server over the control connection'
complete -c linerate -n "__fish_linerate_using_subcommand bench" -l sweep -d 'Every message size from 2 bytes to -l (default 8M) in powers of two, like perftest\'s -a'
complete -c linerate -n "__fish_linerate_using_subcommand bench" -l verify -d 'Check every byte of every RDMA message against a pattern (counts mismatches)'
complete -c linerate -n "__fish_linerate_using_subcommand bench" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c linerate -n "__fish_linerate_using_subcommand bench" -s V -l version -d 'Print version'
complete -c linerate -n "__fish_linerate_using_subcommand disk" -l size -d 'Test file size (e.g. 64M, 20G); refused if it does not fit with a 5% margin' -r
complete -c linerate -n "__fish_linerate_using_subcommand disk" -s t -l time -d 'Seconds per test' -r
complete -c linerate -n "__fish_linerate_using_subcommand disk" -l block -d 'Block of the sequential tests (a multiple of 4K); random tests use 4K' -r
complete -c linerate -n "__fish_linerate_using_subcommand disk" -l qd -d 'Operations in flight (io_uring) or threads (sync)' -r
complete -c linerate -n "__fish_linerate_using_subcommand disk" -l tests -d 'Tests to run, in order' -r -f -a "seq_read\t''
seq_write\t''
rand_read\t''
rand_write\t''"
complete -c linerate -n "__fish_linerate_using_subcommand disk" -l engine -d 'I/O engine: io_uring, a pool of threads doing pread/pwrite, or io_uring when available' -r -f -a "auto\t''
io_uring\t''
sync\t''"
complete -c linerate -n "__fish_linerate_using_subcommand disk" -l jobs -d 'Jobs at once (fio\'s numjobs): each a thread with its own ring (or thread pool) and its own region of the test file; figures are per job and in total' -r
complete -c linerate -n "__fish_linerate_using_subcommand disk" -l color -d 'When to colour the terminal output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c linerate -n "__fish_linerate_using_subcommand disk" -l buffered -d 'Do not try O_DIRECT: measure through the page cache'
complete -c linerate -n "__fish_linerate_using_subcommand disk" -l hipri -d 'Polled I/O (IORING_SETUP_IOPOLL): needs O_DIRECT and a device with poll queues (NVMe with nvme.poll_queues); refused with the reason elsewhere (tmpfs, virtio)'
complete -c linerate -n "__fish_linerate_using_subcommand disk" -l sqpoll -d 'A kernel thread takes submissions from the ring (IORING_SETUP_SQPOLL); it keeps a CPU busy while the test runs'
complete -c linerate -n "__fish_linerate_using_subcommand disk" -l json -d 'Print one JSON document: {schema_version, tests: [...]}'
complete -c linerate -n "__fish_linerate_using_subcommand disk" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c linerate -n "__fish_linerate_using_subcommand disk" -s V -l version -d 'Print version'
complete -c linerate -n "__fish_linerate_using_subcommand mesh" -l rank -d 'This process\'s rank (0..size); default: from the launcher\'s environment' -r
complete -c linerate -n "__fish_linerate_using_subcommand mesh" -l size -d 'How many ranks the run has; default: from the launcher\'s environment or --hosts' -r
complete -c linerate -n "__fish_linerate_using_subcommand mesh" -l hosts -d 'The hosts of the run, in rank order, as a Slurm host list (`node[01-16]`)' -r
complete -c linerate -n "__fish_linerate_using_subcommand mesh" -l self -d 'This host\'s name in --hosts, when its host name is not' -r
complete -c linerate -n "__fish_linerate_using_subcommand mesh" -l coordinator -d 'Where rank 0\'s coordinator listens (HOST or HOST:PORT, default port 5302): rank 0 listens on that port, the others connect to it' -r
complete -c linerate -n "__fish_linerate_using_subcommand mesh" -l rendezvous-dir -d 'A directory every rank sees (NFS, a shared volume) to exchange the coordinator\'s address' -r -F
complete -c linerate -n "__fish_linerate_using_subcommand mesh" -l job -d 'With --rendezvous-dir: the run\'s name, the same on every rank and new for each run (default: SLURM_JOB_ID.SLURM_STEP_ID or PMIX_NAMESPACE)' -r
complete -c linerate -n "__fish_linerate_using_subcommand mesh" -l bind -d 'This rank\'s data address (default: the local address that routes to the coordinator)' -r
complete -c linerate -n "__fish_linerate_using_subcommand mesh" -l data-port -d 'This rank\'s data server port (default: one the kernel picks; the coordinator tells the others)' -r
complete -c linerate -n "__fish_linerate_using_subcommand mesh" -l psk-file -d 'Pre-shared key file: authenticates every rank to the coordinator and to the others\' data servers (challenge-response; the key never crosses the wire). Give every rank the same' -r -F
complete -c linerate -n "__fish_linerate_using_subcommand mesh" -l schedule -d 'Which links in which round: pairwise (every ordered pair), ring, quick (n/2 links), incast:K (K senders to one receiver) or file:PATH (`<round> <rank-or-host> <rank-or-host>` lines)' -r
complete -c linerate -n "__fish_linerate_using_subcommand mesh" -s t -l time -d 'Seconds each bandwidth test runs (each direction of each link)' -r
complete -c linerate -n "__fish_linerate_using_subcommand mesh" -l max-concurrent-pairs -d 'At most this many flows at once (protects oversubscribed fabrics); default: a whole round' -r
complete -c linerate -n "__fish_linerate_using_subcommand mesh" -l provider -d 'With --rdma: the libfabric provider (verbs, tcp, ...); default: the first that offers RMA' -r
complete -c linerate -n "__fish_linerate_using_subcommand mesh" -l csv -d 'Write the matrix as CSV to FILE (rank 0)' -r -F
complete -c linerate -n "__fish_linerate_using_subcommand mesh" -l report -d 'Write an HTML report to FILE (rank 0)' -r -F
complete -c linerate -n "__fish_linerate_using_subcommand mesh" -l join-timeout -d 'Seconds the ranks have to join; the missing ones are then unreachable' -r
complete -c linerate -n "__fish_linerate_using_subcommand mesh" -l heartbeat-timeout -d 'Seconds a rank (or the coordinator) may stay silent before it counts as gone' -r
complete -c linerate -n "__fish_linerate_using_subcommand mesh" -l max-ranks -d 'Rank 0: the most ranks its coordinator admits; a larger --size is refused at start, and so is a join from a rank or size beyond it' -r
complete -c linerate -n "__fish_linerate_using_subcommand mesh" -l max-duration -d 'Data server: the longest test it accepts, seconds (default: serve\'s 300, or --time if longer); below --time is refused at start' -r
complete -c linerate -n "__fish_linerate_using_subcommand mesh" -l max-tests -d 'Data server: most tests running at once (default: serve\'s 8, or --size if more, so every other rank can send to this one at once)' -r
complete -c linerate -n "__fish_linerate_using_subcommand mesh" -l max-memory -d 'Data server: total buffer memory of all its running tests (as serve\'s)' -r
complete -c linerate -n "__fish_linerate_using_subcommand mesh" -l color -d 'When to colour the terminal output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c linerate -n "__fish_linerate_using_subcommand mesh" -l rdma -d 'Run the flows on the RDMA engine (libfabric) instead of TCP'
complete -c linerate -n "__fish_linerate_using_subcommand mesh" -l json -d 'Print the final document as JSON on rank 0\'s standard output'
complete -c linerate -n "__fish_linerate_using_subcommand mesh" -l json-stream -d 'One JSON line per measurement as it happens, on rank 0\'s standard output'
complete -c linerate -n "__fish_linerate_using_subcommand mesh" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c linerate -n "__fish_linerate_using_subcommand mesh" -s V -l version -d 'Print version'
complete -c linerate -n "__fish_linerate_using_subcommand soak" -s p -l port -d 'The server\'s TCP port [default: 5301; with --ssh, one the far end\'s kernel picks]' -r
complete -c linerate -n "__fish_linerate_using_subcommand soak" -s t -l duration -d 'How long to soak (`10m`, `90s`, `1h`, or seconds)' -r
complete -c linerate -n "__fish_linerate_using_subcommand soak" -s i -l interval -d 'How often both ends sample their counters (`1s`, `500ms`; at least 100 ms)' -r
complete -c linerate -n "__fish_linerate_using_subcommand soak" -s P -l parallel -d 'TCP streams per direction' -r
complete -c linerate -n "__fish_linerate_using_subcommand soak" -l rdma-window -d 'The RDMA traffic\'s writes in flight (default 16). On a lossy path without flow control (RoCE without PFC) the transport goes back N on each loss and a large window can stall it; a smaller one keeps it moving, and the soak still judges what the device counted' -r
complete -c linerate -n "__fish_linerate_using_subcommand soak" -l report -d 'Also write a self-contained HTML report with the timeline to this file' -r -F
complete -c linerate -n "__fish_linerate_using_subcommand soak" -l textfile -d 'Also write `linerate_soak.prom` into this directory for node_exporter\'s textfile collector (atomically: a temporary file in DIR, then a rename)' -r -F
complete -c linerate -n "__fish_linerate_using_subcommand soak" -l root -d 'Read this host\'s counters under this directory instead of `/` (a copy or a fixture tree)' -r -F
complete -c linerate -n "__fish_linerate_using_subcommand soak" -l psk-file -d 'Pre-shared key file, when the server requires one' -r -F
complete -c linerate -n "__fish_linerate_using_subcommand soak" -l threshold -d 'Set a threshold of the judge (repeatable, each at most once): ber, pre_fec_ber, min_bits, rcv_errors_per_bit, port_rcv_errors_per_s, link_error_recovery_per_min, xmit_wait_ticks, dip_fraction, tcp_retrans_fraction or temperature_rise_c. Defaults, ranges and sources: docs/soak.md (Thresholds); the ones set are printed with the verdict and listed in the JSON' -r
complete -c linerate -n "__fish_linerate_using_subcommand soak" -l ssh -d 'Start a temporary `linerate serve` on SSHHOST through ssh for this run, and end it with the run (default SSHHOST: HOST). Only the start goes through SSH: the tests go straight to HOST, which may be another address of the same machine' -r
complete -c linerate -n "__fish_linerate_using_subcommand soak" -l ssh-command -d 'With --ssh: the program on SSHHOST, `linerate` (with --iperf3: `iperf3`) by default, looked up on the PATH of a non-interactive shell there; a path starting with `~/` is in the login\'s home' -r
complete -c linerate -n "__fish_linerate_using_subcommand soak" -l ssh-copy -d 'With --ssh: when this linerate copies itself to SSHHOST for the run. auto: when SSHHOST has no `linerate` (or one of an older protocol; not with --ssh-command); always; never. The copy goes over the same ssh session into a private directory (0700) in $XDG_RUNTIME_DIR or the temporary directory (another when that one is noexec), is checked by its SHA-256, and is removed there as soon as its server has started. A far end of another machine or an older glibc is refused, naming both' -r -f -a "never\t''
auto\t''
always\t''"
complete -c linerate -n "__fish_linerate_using_subcommand soak" -l color -d 'When to colour the terminal output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c linerate -n "__fish_linerate_using_subcommand soak" -l iperf3 -d 'Refused: a soak judges both ends\' port counters, which iperf3\'s protocol does not carry; soak against `linerate serve` (--ssh starts one for the run)'
complete -c linerate -n "__fish_linerate_using_subcommand soak" -l both-ways -d 'Traffic both ways at once, so both ends receive (the default)'
complete -c linerate -n "__fish_linerate_using_subcommand soak" -l one-way -d 'Traffic one way only: this host sends, the server receives'
complete -c linerate -n "__fish_linerate_using_subcommand soak" -s R -l reverse -d 'Traffic one way only: the server sends, this host receives'
complete -c linerate -n "__fish_linerate_using_subcommand soak" -l rdma -d 'Also run RDMA traffic beside the TCP streams (as `bench --rdma`); automatic when the route to HOST leaves through an InfiniBand or RoCE port'
complete -c linerate -n "__fish_linerate_using_subcommand soak" -l no-rdma -d 'TCP streams only, also on an InfiniBand or RoCE path'
complete -c linerate -n "__fish_linerate_using_subcommand soak" -l passive -d 'Sample the local ports only, without traffic (no BER verdict without traffic)'
complete -c linerate -n "__fish_linerate_using_subcommand soak" -l json -d 'Print one JSON document (schemas/soak.schema.json) instead of the terminal view'
complete -c linerate -n "__fish_linerate_using_subcommand soak" -l json-stream -d 'Print one JSON line per event (schemas/soak-event.schema.json): start, intervals, end'
complete -c linerate -n "__fish_linerate_using_subcommand soak" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c linerate -n "__fish_linerate_using_subcommand soak" -s V -l version -d 'Print version'
complete -c linerate -n "__fish_linerate_using_subcommand watch" -s i -l interval -d 'How often to sample (`1s`, `250ms`; at least 100 ms)' -r
complete -c linerate -n "__fish_linerate_using_subcommand watch" -l count -d 'Stop after N intervals' -r
complete -c linerate -n "__fish_linerate_using_subcommand watch" -l listen -d 'Serve Prometheus metrics at http://ADDR:PORT/metrics while it runs, and no screen (a port alone listens on 127.0.0.1; give an address to listen elsewhere)' -r
complete -c linerate -n "__fish_linerate_using_subcommand watch" -l max-clients -d 'With --listen: the most clients served at once; more are answered 503 and closed' -r
complete -c linerate -n "__fish_linerate_using_subcommand watch" -l client-timeout -d 'With --listen: the time a client has to send its request and read the answer' -r
complete -c linerate -n "__fish_linerate_using_subcommand watch" -l window -d 'How far back the error counters are judged: soak\'s verdict over the last TIME (between half of it and all of it)' -r
complete -c linerate -n "__fish_linerate_using_subcommand watch" -l root -d 'Read the ports under this directory instead of `/` (a copy or a fixture tree)' -r -F
complete -c linerate -n "__fish_linerate_using_subcommand watch" -l threshold -d 'Set a threshold of soak\'s judge (repeatable, each at most once): ber, pre_fec_ber, min_bits, rcv_errors_per_bit, port_rcv_errors_per_s, link_error_recovery_per_min, xmit_wait_ticks, dip_fraction, tcp_retrans_fraction or temperature_rise_c (docs/soak.md, Thresholds)' -r
complete -c linerate -n "__fish_linerate_using_subcommand watch" -l color -d 'When to colour the terminal output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c linerate -n "__fish_linerate_using_subcommand watch" -l json-stream -d 'One JSON object per interval (schemas/watch-stream.schema.json) instead of the screen'
complete -c linerate -n "__fish_linerate_using_subcommand watch" -l plain -d 'One line per port per interval instead of the screen (what a pipe or a file gets)'
complete -c linerate -n "__fish_linerate_using_subcommand watch" -l bytes -d 'Rates in bytes (GB/s = 10^9 byte/s) instead of bits (Gb/s = 10^9 bit/s)'
complete -c linerate -n "__fish_linerate_using_subcommand watch" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c linerate -n "__fish_linerate_using_subcommand watch" -s V -l version -d 'Print version'
complete -c linerate -n "__fish_linerate_using_subcommand generate; and not __fish_seen_subcommand_from man completions help" -l color -d 'When to colour the terminal output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c linerate -n "__fish_linerate_using_subcommand generate; and not __fish_seen_subcommand_from man completions help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c linerate -n "__fish_linerate_using_subcommand generate; and not __fish_seen_subcommand_from man completions help" -s V -l version -d 'Print version'
complete -c linerate -n "__fish_linerate_using_subcommand generate; and not __fish_seen_subcommand_from man completions help" -f -a "man" -d 'Write the man pages into a directory'
complete -c linerate -n "__fish_linerate_using_subcommand generate; and not __fish_seen_subcommand_from man completions help" -f -a "completions" -d 'Print a shell\'s completion script'
complete -c linerate -n "__fish_linerate_using_subcommand generate; and not __fish_seen_subcommand_from man completions help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c linerate -n "__fish_linerate_using_subcommand generate; and __fish_seen_subcommand_from man" -l color -d 'When to colour the terminal output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c linerate -n "__fish_linerate_using_subcommand generate; and __fish_seen_subcommand_from man" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c linerate -n "__fish_linerate_using_subcommand generate; and __fish_seen_subcommand_from man" -s V -l version -d 'Print version'
complete -c linerate -n "__fish_linerate_using_subcommand generate; and __fish_seen_subcommand_from completions" -l color -d 'When to colour the terminal output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c linerate -n "__fish_linerate_using_subcommand generate; and __fish_seen_subcommand_from completions" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c linerate -n "__fish_linerate_using_subcommand generate; and __fish_seen_subcommand_from completions" -s V -l version -d 'Print version'
complete -c linerate -n "__fish_linerate_using_subcommand generate; and __fish_seen_subcommand_from help" -f -a "man" -d 'Write the man pages into a directory'
complete -c linerate -n "__fish_linerate_using_subcommand generate; and __fish_seen_subcommand_from help" -f -a "completions" -d 'Print a shell\'s completion script'
complete -c linerate -n "__fish_linerate_using_subcommand generate; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c linerate -n "__fish_linerate_using_subcommand setup" -l iface -d 'Only this interface' -r
complete -c linerate -n "__fish_linerate_using_subcommand setup" -l renderer -d 'The network configuration system to edit; auto finds the one in charge of the interface' -r -f -a "auto\t''
netplan\t''
networkmanager\t''
networkd\t''
ifupdown\t''
ifcfg\t''"
complete -c linerate -n "__fish_linerate_using_subcommand setup" -l root -d 'Read and write under this directory instead of `/` (a copy or a fixture tree)' -r -F
complete -c linerate -n "__fish_linerate_using_subcommand setup" -l rollback -d 'Restore the files of an earlier --apply, byte for byte' -r
complete -c linerate -n "__fish_linerate_using_subcommand setup" -l rtt-ms -d 'The round-trip time the TCP buffers are sized for (sysctl), in milliseconds' -r
complete -c linerate -n "__fish_linerate_using_subcommand setup" -l gbps -d 'The rate the TCP buffers are sized for (sysctl), in Gb/s (10^9 bit/s) [default: the fastest port\'s ceiling]; `linerate doctor` quotes it with the round trip it measured' -r
complete -c linerate -n "__fish_linerate_using_subcommand setup" -l nfs-mount -d 'NFS over RDMA: the server\'s export (`server:/export`) for a client\'s mount and fstab line' -r
complete -c linerate -n "__fish_linerate_using_subcommand setup" -l roce-priority -d 'RoCE: the 802.1p priority its traffic is to use, with PFC on it (0-7)' -r
complete -c linerate -n "__fish_linerate_using_subcommand setup" -l roce-dscp -d 'RoCE: the DSCP its traffic is to carry, mapped to that priority (0-63); rdma_cm\'s default ToS carries it with ECN-capable transport (26 → ToS 106)' -r
complete -c linerate -n "__fish_linerate_using_subcommand setup" -l color -d 'When to colour the terminal output' -r -f -a "auto\t''
always\t''
never\t''"
complete -c linerate -n "__fish_linerate_using_subcommand setup" -l apply -d 'Write the files (root needed for `/`): backups first, all or nothing'
complete -c linerate -n "__fish_linerate_using_subcommand setup" -l restart -d 'With --apply: also run the restart command of each interface concerned'
complete -c linerate -n "__fish_linerate_using_subcommand setup" -l sm-node -d 'This node runs the subnet manager (opensm): only then does setup plan one'
complete -c linerate -n "__fish_linerate_using_subcommand setup" -l json -d 'Print one JSON document (schemas/setup.schema.json) instead of the terminal view'
complete -c linerate -n "__fish_linerate_using_subcommand setup" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c linerate -n "__fish_linerate_using_subcommand setup" -s V -l version -d 'Print version'
complete -c linerate -n "__fish_linerate_using_subcommand help; and not __fish_seen_subcommand_from probe plan doctor mem serve bench disk mesh soak watch generate setup help" -f -a "probe" -d 'Inventory every port with its ceiling chain and findings'
complete -c linerate -n "__fish_linerate_using_subcommand help; and not __fish_seen_subcommand_from probe plan doctor mem serve bench disk mesh soak watch generate setup help" -f -a "plan" -d 'Compute the ceiling chain of hardware you do not have yet'
complete -c linerate -n "__fish_linerate_using_subcommand help; and not __fish_seen_subcommand_from probe plan doctor mem serve bench disk mesh soak watch generate setup help" -f -a "doctor" -d 'Explain why a link is slower than its hardware'
complete -c linerate -n "__fish_linerate_using_subcommand help; and not __fish_seen_subcommand_from probe plan doctor mem serve bench disk mesh soak watch generate setup help" -f -a "mem" -d 'Measure memory bandwidth: copy, read and write'
complete -c linerate -n "__fish_linerate_using_subcommand help; and not __fish_seen_subcommand_from probe plan doctor mem serve bench disk mesh soak watch generate setup help" -f -a "serve" -d 'Serve tests to bench, doctor and soak clients'
complete -c linerate -n "__fish_linerate_using_subcommand help; and not __fish_seen_subcommand_from probe plan doctor mem serve bench disk mesh soak watch generate setup help" -f -a "bench" -d 'Measure TCP, UDP, RDMA or latency to a linerate server'
complete -c linerate -n "__fish_linerate_using_subcommand help; and not __fish_seen_subcommand_from probe plan doctor mem serve bench disk mesh soak watch generate setup help" -f -a "disk" -d 'Measure a disk: throughput, IOPS and latency'
complete -c linerate -n "__fish_linerate_using_subcommand help; and not __fish_seen_subcommand_from probe plan doctor mem serve bench disk mesh soak watch generate setup help" -f -a "mesh" -d 'Measure every link of a cluster and explain the bad ones'
complete -c linerate -n "__fish_linerate_using_subcommand help; and not __fish_seen_subcommand_from probe plan doctor mem serve bench disk mesh soak watch generate setup help" -f -a "soak" -d 'Judge a cable by its error counters under steady traffic'
complete -c linerate -n "__fish_linerate_using_subcommand help; and not __fish_seen_subcommand_from probe plan doctor mem serve bench disk mesh soak watch generate setup help" -f -a "watch" -d 'Show every port live, against its ceiling, errors judged'
complete -c linerate -n "__fish_linerate_using_subcommand help; and not __fish_seen_subcommand_from probe plan doctor mem serve bench disk mesh soak watch generate setup help" -f -a "generate" -d 'Write the man pages or a shell\'s completion script'
complete -c linerate -n "__fish_linerate_using_subcommand help; and not __fish_seen_subcommand_from probe plan doctor mem serve bench disk mesh soak watch generate setup help" -f -a "setup" -d 'Print or write the configuration that makes links fast'
complete -c linerate -n "__fish_linerate_using_subcommand help; and not __fish_seen_subcommand_from probe plan doctor mem serve bench disk mesh soak watch generate setup help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c linerate -n "__fish_linerate_using_subcommand help; and __fish_seen_subcommand_from generate" -f -a "man" -d 'Write the man pages into a directory'
complete -c linerate -n "__fish_linerate_using_subcommand help; and __fish_seen_subcommand_from generate" -f -a "completions" -d 'Print a shell\'s completion script'
