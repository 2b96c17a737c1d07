
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'linerate' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'linerate'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'linerate' {
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour the terminal output')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('probe', 'probe', [CompletionResultType]::ParameterValue, 'Inventory every port with its ceiling chain and findings')
            [CompletionResult]::new('plan', 'plan', [CompletionResultType]::ParameterValue, 'Compute the ceiling chain of hardware you do not have yet')
            [CompletionResult]::new('doctor', 'doctor', [CompletionResultType]::ParameterValue, 'Explain why a link is slower than its hardware')
            [CompletionResult]::new('mem', 'mem', [CompletionResultType]::ParameterValue, 'Measure memory bandwidth: copy, read and write')
            [CompletionResult]::new('serve', 'serve', [CompletionResultType]::ParameterValue, 'Serve tests to bench, doctor and soak clients')
            [CompletionResult]::new('bench', 'bench', [CompletionResultType]::ParameterValue, 'Measure TCP, UDP, RDMA or latency to a linerate server')
            [CompletionResult]::new('disk', 'disk', [CompletionResultType]::ParameterValue, 'Measure a disk: throughput, IOPS and latency')
            [CompletionResult]::new('mesh', 'mesh', [CompletionResultType]::ParameterValue, 'Measure every link of a cluster and explain the bad ones')
            [CompletionResult]::new('soak', 'soak', [CompletionResultType]::ParameterValue, 'Judge a cable by its error counters under steady traffic')
            [CompletionResult]::new('watch', 'watch', [CompletionResultType]::ParameterValue, 'Show every port live, against its ceiling, errors judged')
            [CompletionResult]::new('generate', 'generate', [CompletionResultType]::ParameterValue, 'Write the man pages or a shell''s completion script')
            [CompletionResult]::new('setup', 'setup', [CompletionResultType]::ParameterValue, 'Print or write the configuration that makes links fast')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'linerate;probe' {
            [CompletionResult]::new('--root', '--root', [CompletionResultType]::ParameterName, 'Read sysfs and procfs under this directory instead of `/` (a copy or a fixture tree)')
            [CompletionResult]::new('--fail-on', '--fail-on', [CompletionResultType]::ParameterName, 'Exit with status 1 when a finding of at least this severity is present')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour the terminal output')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document (schemas/probe.schema.json) instead of the terminal view')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'linerate;plan' {
            [CompletionResult]::new('--link', '--link', [CompletionResultType]::ParameterName, 'The link: `4x-qdr`, `4x-fdr`, `hdr`, `1x-edr`, `10gbe`, `100gbe`, ...')
            [CompletionResult]::new('--pcie', '--pcie', [CompletionResultType]::ParameterName, 'The PCIe link the card gets: `gen2x4`, `gen3x16`, ... (omit to ignore PCIe)')
            [CompletionResult]::new('--mtu', '--mtu', [CompletionResultType]::ParameterName, 'MTU of the IP interface, to add the TCP goodput stage')
            [CompletionResult]::new('--ipoib', '--ipoib', [CompletionResultType]::ParameterName, 'IPoIB mode for an InfiniBand link with --mtu (default: connected above 4092, else datagram)')
            [CompletionResult]::new('--mps', '--mps', [CompletionResultType]::ParameterName, 'PCIe max payload size in bytes, if you know it (`lspci -vv` as root: DevCtl MaxPayload)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour the terminal output')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON object with the ceiling instead of the terminal view')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'linerate;doctor' {
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'Server port [default: 5301, with --iperf3 5201; with --ssh, one the far end''s kernel picks, with --iperf3 the first of 5201-5299 free there]')
            [CompletionResult]::new('--port', '--port', [CompletionResultType]::ParameterName, 'Server port [default: 5301, with --iperf3 5201; with --ssh, one the far end''s kernel picks, with --iperf3 the first of 5201-5299 free there]')
            [CompletionResult]::new('--report', '--report', [CompletionResultType]::ParameterName, 'Also write a self-contained HTML report with charts')
            [CompletionResult]::new('--fail-on', '--fail-on', [CompletionResultType]::ParameterName, 'Exit with status 1 when a finding of at least this severity is present')
            [CompletionResult]::new('-B', '-B ', [CompletionResultType]::ParameterName, 'Local address to test from')
            [CompletionResult]::new('--bind', '--bind', [CompletionResultType]::ParameterName, 'Local address to test from')
            [CompletionResult]::new('--psk-file', '--psk-file', [CompletionResultType]::ParameterName, 'Pre-shared key file, when the server requires one')
            [CompletionResult]::new('--disk', '--disk', [CompletionResultType]::ParameterName, 'A directory whose disk joins the storage pyramid (repeatable; default: the current directory). The first also holds the source of a disk-to-disk copy through the path')
            [CompletionResult]::new('--rdma-provider', '--rdma-provider', [CompletionResultType]::ParameterName, 'Measure RDMA beside TCP with this libfabric provider (by default doctor does so with `verbs` when this end of the path is an InfiniBand or RoCE port)')
            [CompletionResult]::new('--ssh', '--ssh', [CompletionResultType]::ParameterName, 'Start a temporary `linerate serve` on SSHHOST through ssh for this run, and end it with the run (default SSHHOST: HOST). Only the start goes through SSH: the tests go straight to HOST, which may be another address of the same machine')
            [CompletionResult]::new('--ssh-command', '--ssh-command', [CompletionResultType]::ParameterName, 'With --ssh: the program on SSHHOST, `linerate` (with --iperf3: `iperf3`) by default, looked up on the PATH of a non-interactive shell there; a path starting with `~/` is in the login''s home')
            [CompletionResult]::new('--ssh-copy', '--ssh-copy', [CompletionResultType]::ParameterName, 'With --ssh: when this linerate copies itself to SSHHOST for the run. auto: when SSHHOST has no `linerate` (or one of an older protocol; not with --ssh-command); always; never. The copy goes over the same ssh session into a private directory (0700) in $XDG_RUNTIME_DIR or the temporary directory (another when that one is noexec), is checked by its SHA-256, and is removed there as soon as its server has started. A far end of another machine or an older glibc is refused, naming both')
            [CompletionResult]::new('--ssh-disk', '--ssh-disk', [CompletionResultType]::ParameterName, 'With --ssh: the directory on SSHHOST whose disk receives the disk-to-disk copy, in a scratch directory the far end makes there and removes (default: the login directory)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour the terminal output')
            [CompletionResult]::new('--iperf3', '--iperf3', [CompletionResultType]::ParameterName, 'The far end is a stock iperf3 server (`iperf3 -s`, 3.1 or later; with --ssh, one started there for the run): its TCP and UDP tests run in iperf3''s protocol; latency, RDMA, the disk-to-disk copy and the far end''s inventory are skipped with the reason, and the verdict is judged from this end only')
            [CompletionResult]::new('--quick', '--quick', [CompletionResultType]::ParameterName, 'A shorter plan (about 10 s)')
            [CompletionResult]::new('--thorough', '--thorough', [CompletionResultType]::ParameterName, 'A longer plan (about a minute): longer runs, reverse multi-stream, bidirectional, UDP latency')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document (schemas/doctor.schema.json)')
            [CompletionResult]::new('--no-disk', '--no-disk', [CompletionResultType]::ParameterName, 'Leave disks out: memory and network only')
            [CompletionResult]::new('--no-rdma', '--no-rdma', [CompletionResultType]::ParameterName, 'Do not measure RDMA')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'linerate;mem' {
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'Seconds per test')
            [CompletionResult]::new('--time', '--time', [CompletionResultType]::ParameterName, 'Seconds per test')
            [CompletionResult]::new('--size', '--size', [CompletionResultType]::ParameterName, 'Bytes per buffer (each thread has two for copy); far larger than the caches')
            [CompletionResult]::new('--threads', '--threads', [CompletionResultType]::ParameterName, 'Threads for the all-cores tests (default: every online CPU)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour the terminal output')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'linerate;serve' {
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'TCP port for control and data connections')
            [CompletionResult]::new('--port', '--port', [CompletionResultType]::ParameterName, 'TCP port for control and data connections')
            [CompletionResult]::new('-B', '-B ', [CompletionResultType]::ParameterName, 'Address to listen on (`::` for IPv6 and IPv4)')
            [CompletionResult]::new('--bind', '--bind', [CompletionResultType]::ParameterName, 'Address to listen on (`::` for IPv6 and IPv4)')
            [CompletionResult]::new('--iperf3-port', '--iperf3-port', [CompletionResultType]::ParameterName, 'Listen on this port too (e.g. 5201, iperf3''s), for stock iperf3 clients that cannot be told another port; both ports serve both protocols, and take iperf3''s UDP streams')
            [CompletionResult]::new('--max-tests', '--max-tests', [CompletionResultType]::ParameterName, 'Most tests running at once')
            [CompletionResult]::new('--max-streams', '--max-streams', [CompletionResultType]::ParameterName, 'Most streams per test (per direction)')
            [CompletionResult]::new('--max-duration', '--max-duration', [CompletionResultType]::ParameterName, 'Longest test, seconds')
            [CompletionResult]::new('--max-soak-duration', '--max-soak-duration', [CompletionResultType]::ParameterName, 'Longest soak (`linerate soak`), seconds: the one test meant to run long')
            [CompletionResult]::new('--max-udp-bitrate', '--max-udp-bitrate', [CompletionResultType]::ParameterName, 'Highest UDP rate per stream (e.g. 10G); 0 = no limit')
            [CompletionResult]::new('--max-length', '--max-length', [CompletionResultType]::ParameterName, 'Largest read/write length a client may ask for')
            [CompletionResult]::new('--max-memory', '--max-memory', [CompletionResultType]::ParameterName, 'Total buffer memory of all running tests')
            [CompletionResult]::new('--psk-file', '--psk-file', [CompletionResultType]::ParameterName, 'Require clients to prove they know the key in this file (challenge-response; the key never crosses the wire)')
            [CompletionResult]::new('--handshake-timeout', '--handshake-timeout', [CompletionResultType]::ParameterName, 'Seconds a new connection has to complete its handshake')
            [CompletionResult]::new('--max-pending', '--max-pending', [CompletionResultType]::ParameterName, 'Most connections in their handshake at once; more are closed immediately')
            [CompletionResult]::new('--max-served', '--max-served', [CompletionResultType]::ParameterName, 'Exit after serving this many tests')
            [CompletionResult]::new('--exit-after', '--exit-after', [CompletionResultType]::ParameterName, 'Exit this long after starting, tests running or not (`90s`, `10m`, or seconds): the hard deadline of a temporary server')
            [CompletionResult]::new('--write-dir', '--write-dir', [CompletionResultType]::ParameterName, 'Accept file transfers (`bench --file`) into this directory, and nowhere else: names are single path components, existing files are never overwritten, incomplete copies removed. The packaged service''s directory, /var/lib/linerate, is deleted with the copies in it when the package is purged (`dpkg --purge linerate`)')
            [CompletionResult]::new('--scratch-write-dir', '--scratch-write-dir', [CompletionResultType]::ParameterName, 'Accept file transfers into a new directory made in PARENT, removed with its contents when the server exits (`--ssh` uses it for doctor''s copy and `bench --file`)')
            [CompletionResult]::new('--max-file-size', '--max-file-size', [CompletionResultType]::ParameterName, 'Largest file a client may send (with --write-dir or --scratch-write-dir); 0 = bounded by free space only')
            [CompletionResult]::new('--max-spin', '--max-spin', [CompletionResultType]::ParameterName, 'Latency tests: the longest busy-poll per wait the echo grants a client''s `--spin`, µs; more is capped to it and the client is told; 0 = always block')
            [CompletionResult]::new('--root', '--root', [CompletionResultType]::ParameterName, 'Read the port counters a soak samples under this directory instead of `/` (a copy or a fixture tree; the ethtool statistics are read only from the live system)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour the terminal output')
            [CompletionResult]::new('--once', '--once', [CompletionResultType]::ParameterName, 'Exit after serving one test')
            [CompletionResult]::new('--exit-on-stdin-close', '--exit-on-stdin-close', [CompletionResultType]::ParameterName, 'Exit when standard input closes: the lifeline of a server started over ssh (`--ssh`), which then ends with the ssh session however its client ended, even killed')
            [CompletionResult]::new('--psk-stdin', '--psk-stdin', [CompletionResultType]::ParameterName, 'Read the pre-shared key from the first line of standard input, so it appears in no command line, environment or file (`--ssh` passes a fresh key this way)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'linerate;bench' {
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'Server port [default: 5301, with --iperf3 5201; with --ssh, one the far end''s kernel picks, with --iperf3 the first of 5201-5299 free there]')
            [CompletionResult]::new('--port', '--port', [CompletionResultType]::ParameterName, 'Server port [default: 5301, with --iperf3 5201; with --ssh, one the far end''s kernel picks, with --iperf3 the first of 5201-5299 free there]')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'Seconds to run (default 10; with --file, the time limit of the copy, default 300)')
            [CompletionResult]::new('--time', '--time', [CompletionResultType]::ParameterName, 'Seconds to run (default 10; with --file, the time limit of the copy, default 300)')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'With --iperf3: end the test once this host has sent or received BYTES after -O (K, M, G, T: 1024), instead of after -t')
            [CompletionResult]::new('--bytes', '--bytes', [CompletionResultType]::ParameterName, 'With --iperf3: end the test once this host has sent or received BYTES after -O (K, M, G, T: 1024), instead of after -t')
            [CompletionResult]::new('-k', '-k', [CompletionResultType]::ParameterName, 'With --iperf3: the same in blocks of -l bytes')
            [CompletionResult]::new('--blockcount', '--blockcount', [CompletionResultType]::ParameterName, 'With --iperf3: the same in blocks of -l bytes')
            [CompletionResult]::new('-P', '-P ', [CompletionResultType]::ParameterName, 'Parallel streams, one thread each')
            [CompletionResult]::new('--parallel', '--parallel', [CompletionResultType]::ParameterName, 'Parallel streams, one thread each')
            [CompletionResult]::new('-O', '-O ', [CompletionResultType]::ParameterName, 'Seconds of warm-up to leave out of the totals')
            [CompletionResult]::new('--omit', '--omit', [CompletionResultType]::ParameterName, 'Seconds of warm-up to leave out of the totals')
            [CompletionResult]::new('-i', '-i', [CompletionResultType]::ParameterName, 'Seconds between interval reports (0 = none)')
            [CompletionResult]::new('--interval', '--interval', [CompletionResultType]::ParameterName, 'Seconds between interval reports (0 = none)')
            [CompletionResult]::new('-l', '-l', [CompletionResultType]::ParameterName, 'Bytes per write (TCP, default 1M for one connection, 256K for 2-8, 128K beyond; the receiver reads up to 1M), per datagram (UDP, default 1400) or per request (latency, default 1)')
            [CompletionResult]::new('--length', '--length', [CompletionResultType]::ParameterName, 'Bytes per write (TCP, default 1M for one connection, 256K for 2-8, 128K beyond; the receiver reads up to 1M), per datagram (UDP, default 1400) or per request (latency, default 1)')
            [CompletionResult]::new('-w', '-w', [CompletionResultType]::ParameterName, 'Socket buffer size to request (SO_SNDBUF/SO_RCVBUF); with --rdma, the number of operations outstanding per queue pair (default 16)')
            [CompletionResult]::new('--window', '--window', [CompletionResultType]::ParameterName, 'Socket buffer size to request (SO_SNDBUF/SO_RCVBUF); with --rdma, the number of operations outstanding per queue pair (default 16)')
            [CompletionResult]::new('-b', '-b', [CompletionResultType]::ParameterName, 'Target rate per stream, bit/s with K/M/G suffix; 0 = as fast as possible (UDP default 1G, TCP default 0)')
            [CompletionResult]::new('--bitrate', '--bitrate', [CompletionResultType]::ParameterName, 'Target rate per stream, bit/s with K/M/G suffix; 0 = as fast as possible (UDP default 1G, TCP default 0)')
            [CompletionResult]::new('-B', '-B ', [CompletionResultType]::ParameterName, 'Local address to send from')
            [CompletionResult]::new('--bind', '--bind', [CompletionResultType]::ParameterName, 'Local address to send from')
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'TCP congestion control algorithm (e.g. cubic, bbr)')
            [CompletionResult]::new('--congestion', '--congestion', [CompletionResultType]::ParameterName, 'TCP congestion control algorithm (e.g. cubic, bbr)')
            [CompletionResult]::new('-A', '-A ', [CompletionResultType]::ParameterName, 'Pin this host''s stream threads to these CPUs, round robin (e.g. 1 or 0,1)')
            [CompletionResult]::new('--affinity', '--affinity', [CompletionResultType]::ParameterName, 'Pin this host''s stream threads to these CPUs, round robin (e.g. 1 or 0,1)')
            [CompletionResult]::new('--spin', '--spin', [CompletionResultType]::ParameterName, 'Latency: poll this many µs for each reply before blocking (both ends), so replies that come quickly cost no scheduler wake-up. Needs idle cores on both hosts; 0 (the default) blocks at once, as netperf and sockperf do')
            [CompletionResult]::new('--test', '--test', [CompletionResultType]::ParameterName, 'The test to run')
            [CompletionResult]::new('--psk-file', '--psk-file', [CompletionResultType]::ParameterName, 'Pre-shared key file, when the server requires one')
            [CompletionResult]::new('--connect-timeout', '--connect-timeout', [CompletionResultType]::ParameterName, 'Seconds to wait for the server to answer the connection (a firewall that drops the port shows as this time-out)')
            [CompletionResult]::new('--file', '--file', [CompletionResultType]::ParameterName, 'Copy this file to the server''s write directory (`serve --write-dir`): disk → network → disk, with the time of each layer, to tell which one held the copy back')
            [CompletionResult]::new('--file-name', '--file-name', [CompletionResultType]::ParameterName, 'The name to give the copy on the server (default: SRC''s file name)')
            [CompletionResult]::new('--provider', '--provider', [CompletionResultType]::ParameterName, 'libfabric provider: verbs (InfiniBand/RoCE), tcp, ... (default: the first offering RMA)')
            [CompletionResult]::new('--device', '--device', [CompletionResultType]::ParameterName, 'This end''s RDMA device (mlx5_0, rxe0; with the tcp provider, the interface), like perftest''s -d (default: the one carrying the route to HOST). It must carry that route')
            [CompletionResult]::new('--op', '--op', [CompletionResultType]::ParameterName, 'RDMA operation')
            [CompletionResult]::new('--qps', '--qps', [CompletionResultType]::ParameterName, 'Queue pairs (connections), each on its own thread')
            [CompletionResult]::new('--ssh', '--ssh', [CompletionResultType]::ParameterName, 'Start a temporary `linerate serve` on SSHHOST through ssh for this run, and end it with the run (default SSHHOST: HOST). Only the start goes through SSH: the tests go straight to HOST, which may be another address of the same machine')
            [CompletionResult]::new('--ssh-command', '--ssh-command', [CompletionResultType]::ParameterName, 'With --ssh: the program on SSHHOST, `linerate` (with --iperf3: `iperf3`) by default, looked up on the PATH of a non-interactive shell there; a path starting with `~/` is in the login''s home')
            [CompletionResult]::new('--ssh-copy', '--ssh-copy', [CompletionResultType]::ParameterName, 'With --ssh: when this linerate copies itself to SSHHOST for the run. auto: when SSHHOST has no `linerate` (or one of an older protocol; not with --ssh-command); always; never. The copy goes over the same ssh session into a private directory (0700) in $XDG_RUNTIME_DIR or the temporary directory (another when that one is noexec), is checked by its SHA-256, and is removed there as soon as its server has started. A far end of another machine or an older glibc is refused, naming both')
            [CompletionResult]::new('--ssh-disk', '--ssh-disk', [CompletionResultType]::ParameterName, 'With --ssh and --file: the directory on SSHHOST the copy is written to, in a scratch directory the far end makes there and removes when it ends (default: the login directory)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour the terminal output')
            [CompletionResult]::new('--iperf3', '--iperf3', [CompletionResultType]::ParameterName, 'Measure against a stock iperf3 server (`iperf3 -s`, 3.1 or later) in iperf3''s own protocol: TCP or UDP bandwidth tests, this host''s side measured by linerate, the server''s own figures beside')
            [CompletionResult]::new('-R', '-R ', [CompletionResultType]::ParameterName, 'Reverse: the server sends, this host receives')
            [CompletionResult]::new('--reverse', '--reverse', [CompletionResultType]::ParameterName, 'Reverse: the server sends, this host receives')
            [CompletionResult]::new('--bidir', '--bidir', [CompletionResultType]::ParameterName, 'Both directions at once')
            [CompletionResult]::new('-u', '-u', [CompletionResultType]::ParameterName, 'UDP instead of TCP')
            [CompletionResult]::new('--udp', '--udp', [CompletionResultType]::ParameterName, 'UDP instead of TCP')
            [CompletionResult]::new('-4', '-4', [CompletionResultType]::ParameterName, 'IPv4 only')
            [CompletionResult]::new('--version4', '--version4', [CompletionResultType]::ParameterName, 'IPv4 only')
            [CompletionResult]::new('-6', '-6', [CompletionResultType]::ParameterName, 'IPv6 only')
            [CompletionResult]::new('--version6', '--version6', [CompletionResultType]::ParameterName, 'IPv6 only')
            [CompletionResult]::new('-Z', '-Z ', [CompletionResultType]::ParameterName, 'Send with sendfile(2) from an in-memory file (no copy from user space)')
            [CompletionResult]::new('--zerocopy', '--zerocopy', [CompletionResultType]::ParameterName, 'Send with sendfile(2) from an in-memory file (no copy from user space)')
            [CompletionResult]::new('--latency', '--latency', [CompletionResultType]::ParameterName, 'Measure request/response round trips (same as --test tcp_lat, or udp_lat with -u)')
            [CompletionResult]::new('--discard', '--discard', [CompletionResultType]::ParameterName, 'TCP: the receiver drops the data in the kernel (recv with MSG_TRUNC) instead of copying it to user space: a diagnostic of how much of the rate the receiving copy costs')
            [CompletionResult]::new('--no-rcvlowat', '--no-rcvlowat', [CompletionResultType]::ParameterName, 'TCP: wake the receiver on every arrival, as iperf3''s is, instead of once about 1 ms of data has queued (SO_RCVLOWAT): what a plain application sees, wake-ups included')
            [CompletionResult]::new('-J', '-J ', [CompletionResultType]::ParameterName, 'Print one JSON document at the end (schemas/bench.schema.json)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document at the end (schemas/bench.schema.json)')
            [CompletionResult]::new('--json-stream', '--json-stream', [CompletionResultType]::ParameterName, 'Print one JSON object per line as events happen')
            [CompletionResult]::new('--no-fsync', '--no-fsync', [CompletionResultType]::ParameterName, 'Do not make the copy durable (fsync) on the server before measuring the end')
            [CompletionResult]::new('--remove-after', '--remove-after', [CompletionResultType]::ParameterName, 'Ask the server to delete the copy once measured (for repeated benchmarks)')
            [CompletionResult]::new('--rdma', '--rdma', [CompletionResultType]::ParameterName, 'RDMA through libfabric (bandwidth; with --latency, latency), negotiated with the server over the control connection')
            [CompletionResult]::new('--sweep', '--sweep', [CompletionResultType]::ParameterName, 'Every message size from 2 bytes to -l (default 8M) in powers of two, like perftest''s -a')
            [CompletionResult]::new('--verify', '--verify', [CompletionResultType]::ParameterName, 'Check every byte of every RDMA message against a pattern (counts mismatches)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'linerate;disk' {
            [CompletionResult]::new('--size', '--size', [CompletionResultType]::ParameterName, 'Test file size (e.g. 64M, 20G); refused if it does not fit with a 5% margin')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'Seconds per test')
            [CompletionResult]::new('--time', '--time', [CompletionResultType]::ParameterName, 'Seconds per test')
            [CompletionResult]::new('--block', '--block', [CompletionResultType]::ParameterName, 'Block of the sequential tests (a multiple of 4K); random tests use 4K')
            [CompletionResult]::new('--qd', '--qd', [CompletionResultType]::ParameterName, 'Operations in flight (io_uring) or threads (sync)')
            [CompletionResult]::new('--tests', '--tests', [CompletionResultType]::ParameterName, 'Tests to run, in order')
            [CompletionResult]::new('--engine', '--engine', [CompletionResultType]::ParameterName, 'I/O engine: io_uring, a pool of threads doing pread/pwrite, or io_uring when available')
            [CompletionResult]::new('--jobs', '--jobs', [CompletionResultType]::ParameterName, 'Jobs at once (fio''s numjobs): each a thread with its own ring (or thread pool) and its own region of the test file; figures are per job and in total')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour the terminal output')
            [CompletionResult]::new('--buffered', '--buffered', [CompletionResultType]::ParameterName, 'Do not try O_DIRECT: measure through the page cache')
            [CompletionResult]::new('--hipri', '--hipri', [CompletionResultType]::ParameterName, 'Polled I/O (IORING_SETUP_IOPOLL): needs O_DIRECT and a device with poll queues (NVMe with nvme.poll_queues); refused with the reason elsewhere (tmpfs, virtio)')
            [CompletionResult]::new('--sqpoll', '--sqpoll', [CompletionResultType]::ParameterName, 'A kernel thread takes submissions from the ring (IORING_SETUP_SQPOLL); it keeps a CPU busy while the test runs')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document: {schema_version, tests: [...]}')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'linerate;mesh' {
            [CompletionResult]::new('--rank', '--rank', [CompletionResultType]::ParameterName, 'This process''s rank (0..size); default: from the launcher''s environment')
            [CompletionResult]::new('--size', '--size', [CompletionResultType]::ParameterName, 'How many ranks the run has; default: from the launcher''s environment or --hosts')
            [CompletionResult]::new('--hosts', '--hosts', [CompletionResultType]::ParameterName, 'The hosts of the run, in rank order, as a Slurm host list (`node[01-16]`)')
            [CompletionResult]::new('--self', '--self', [CompletionResultType]::ParameterName, 'This host''s name in --hosts, when its host name is not')
            [CompletionResult]::new('--coordinator', '--coordinator', [CompletionResultType]::ParameterName, 'Where rank 0''s coordinator listens (HOST or HOST:PORT, default port 5302): rank 0 listens on that port, the others connect to it')
            [CompletionResult]::new('--rendezvous-dir', '--rendezvous-dir', [CompletionResultType]::ParameterName, 'A directory every rank sees (NFS, a shared volume) to exchange the coordinator''s address')
            [CompletionResult]::new('--job', '--job', [CompletionResultType]::ParameterName, 'With --rendezvous-dir: the run''s name, the same on every rank and new for each run (default: SLURM_JOB_ID.SLURM_STEP_ID or PMIX_NAMESPACE)')
            [CompletionResult]::new('--bind', '--bind', [CompletionResultType]::ParameterName, 'This rank''s data address (default: the local address that routes to the coordinator)')
            [CompletionResult]::new('--data-port', '--data-port', [CompletionResultType]::ParameterName, 'This rank''s data server port (default: one the kernel picks; the coordinator tells the others)')
            [CompletionResult]::new('--psk-file', '--psk-file', [CompletionResultType]::ParameterName, 'Pre-shared key file: authenticates every rank to the coordinator and to the others'' data servers (challenge-response; the key never crosses the wire). Give every rank the same')
            [CompletionResult]::new('--schedule', '--schedule', [CompletionResultType]::ParameterName, 'Which links in which round: pairwise (every ordered pair), ring, quick (n/2 links), incast:K (K senders to one receiver) or file:PATH (`<round> <rank-or-host> <rank-or-host>` lines)')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'Seconds each bandwidth test runs (each direction of each link)')
            [CompletionResult]::new('--time', '--time', [CompletionResultType]::ParameterName, 'Seconds each bandwidth test runs (each direction of each link)')
            [CompletionResult]::new('--max-concurrent-pairs', '--max-concurrent-pairs', [CompletionResultType]::ParameterName, 'At most this many flows at once (protects oversubscribed fabrics); default: a whole round')
            [CompletionResult]::new('--provider', '--provider', [CompletionResultType]::ParameterName, 'With --rdma: the libfabric provider (verbs, tcp, ...); default: the first that offers RMA')
            [CompletionResult]::new('--csv', '--csv', [CompletionResultType]::ParameterName, 'Write the matrix as CSV to FILE (rank 0)')
            [CompletionResult]::new('--report', '--report', [CompletionResultType]::ParameterName, 'Write an HTML report to FILE (rank 0)')
            [CompletionResult]::new('--join-timeout', '--join-timeout', [CompletionResultType]::ParameterName, 'Seconds the ranks have to join; the missing ones are then unreachable')
            [CompletionResult]::new('--heartbeat-timeout', '--heartbeat-timeout', [CompletionResultType]::ParameterName, 'Seconds a rank (or the coordinator) may stay silent before it counts as gone')
            [CompletionResult]::new('--max-ranks', '--max-ranks', [CompletionResultType]::ParameterName, 'Rank 0: the most ranks its coordinator admits; a larger --size is refused at start, and so is a join from a rank or size beyond it')
            [CompletionResult]::new('--max-duration', '--max-duration', [CompletionResultType]::ParameterName, 'Data server: the longest test it accepts, seconds (default: serve''s 300, or --time if longer); below --time is refused at start')
            [CompletionResult]::new('--max-tests', '--max-tests', [CompletionResultType]::ParameterName, 'Data server: most tests running at once (default: serve''s 8, or --size if more, so every other rank can send to this one at once)')
            [CompletionResult]::new('--max-memory', '--max-memory', [CompletionResultType]::ParameterName, 'Data server: total buffer memory of all its running tests (as serve''s)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour the terminal output')
            [CompletionResult]::new('--rdma', '--rdma', [CompletionResultType]::ParameterName, 'Run the flows on the RDMA engine (libfabric) instead of TCP')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print the final document as JSON on rank 0''s standard output')
            [CompletionResult]::new('--json-stream', '--json-stream', [CompletionResultType]::ParameterName, 'One JSON line per measurement as it happens, on rank 0''s standard output')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'linerate;soak' {
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'The server''s TCP port [default: 5301; with --ssh, one the far end''s kernel picks]')
            [CompletionResult]::new('--port', '--port', [CompletionResultType]::ParameterName, 'The server''s TCP port [default: 5301; with --ssh, one the far end''s kernel picks]')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'How long to soak (`10m`, `90s`, `1h`, or seconds)')
            [CompletionResult]::new('--duration', '--duration', [CompletionResultType]::ParameterName, 'How long to soak (`10m`, `90s`, `1h`, or seconds)')
            [CompletionResult]::new('-i', '-i', [CompletionResultType]::ParameterName, 'How often both ends sample their counters (`1s`, `500ms`; at least 100 ms)')
            [CompletionResult]::new('--interval', '--interval', [CompletionResultType]::ParameterName, 'How often both ends sample their counters (`1s`, `500ms`; at least 100 ms)')
            [CompletionResult]::new('-P', '-P ', [CompletionResultType]::ParameterName, 'TCP streams per direction')
            [CompletionResult]::new('--parallel', '--parallel', [CompletionResultType]::ParameterName, 'TCP streams per direction')
            [CompletionResult]::new('--rdma-window', '--rdma-window', [CompletionResultType]::ParameterName, 'The RDMA traffic''s writes in flight (default 16). On a lossy path without flow control (RoCE without PFC) the transport goes back N on each loss and a large window can stall it; a smaller one keeps it moving, and the soak still judges what the device counted')
            [CompletionResult]::new('--report', '--report', [CompletionResultType]::ParameterName, 'Also write a self-contained HTML report with the timeline to this file')
            [CompletionResult]::new('--textfile', '--textfile', [CompletionResultType]::ParameterName, 'Also write `linerate_soak.prom` into this directory for node_exporter''s textfile collector (atomically: a temporary file in DIR, then a rename)')
            [CompletionResult]::new('--root', '--root', [CompletionResultType]::ParameterName, 'Read this host''s counters under this directory instead of `/` (a copy or a fixture tree)')
            [CompletionResult]::new('--psk-file', '--psk-file', [CompletionResultType]::ParameterName, 'Pre-shared key file, when the server requires one')
            [CompletionResult]::new('--threshold', '--threshold', [CompletionResultType]::ParameterName, 'Set a threshold of the judge (repeatable, each at most once): ber, pre_fec_ber, min_bits, rcv_errors_per_bit, port_rcv_errors_per_s, link_error_recovery_per_min, xmit_wait_ticks, dip_fraction, tcp_retrans_fraction or temperature_rise_c. Defaults, ranges and sources: docs/soak.md (Thresholds); the ones set are printed with the verdict and listed in the JSON')
            [CompletionResult]::new('--ssh', '--ssh', [CompletionResultType]::ParameterName, 'Start a temporary `linerate serve` on SSHHOST through ssh for this run, and end it with the run (default SSHHOST: HOST). Only the start goes through SSH: the tests go straight to HOST, which may be another address of the same machine')
            [CompletionResult]::new('--ssh-command', '--ssh-command', [CompletionResultType]::ParameterName, 'With --ssh: the program on SSHHOST, `linerate` (with --iperf3: `iperf3`) by default, looked up on the PATH of a non-interactive shell there; a path starting with `~/` is in the login''s home')
            [CompletionResult]::new('--ssh-copy', '--ssh-copy', [CompletionResultType]::ParameterName, 'With --ssh: when this linerate copies itself to SSHHOST for the run. auto: when SSHHOST has no `linerate` (or one of an older protocol; not with --ssh-command); always; never. The copy goes over the same ssh session into a private directory (0700) in $XDG_RUNTIME_DIR or the temporary directory (another when that one is noexec), is checked by its SHA-256, and is removed there as soon as its server has started. A far end of another machine or an older glibc is refused, naming both')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour the terminal output')
            [CompletionResult]::new('--iperf3', '--iperf3', [CompletionResultType]::ParameterName, 'Refused: a soak judges both ends'' port counters, which iperf3''s protocol does not carry; soak against `linerate serve` (--ssh starts one for the run)')
            [CompletionResult]::new('--both-ways', '--both-ways', [CompletionResultType]::ParameterName, 'Traffic both ways at once, so both ends receive (the default)')
            [CompletionResult]::new('--one-way', '--one-way', [CompletionResultType]::ParameterName, 'Traffic one way only: this host sends, the server receives')
            [CompletionResult]::new('-R', '-R ', [CompletionResultType]::ParameterName, 'Traffic one way only: the server sends, this host receives')
            [CompletionResult]::new('--reverse', '--reverse', [CompletionResultType]::ParameterName, 'Traffic one way only: the server sends, this host receives')
            [CompletionResult]::new('--rdma', '--rdma', [CompletionResultType]::ParameterName, 'Also run RDMA traffic beside the TCP streams (as `bench --rdma`); automatic when the route to HOST leaves through an InfiniBand or RoCE port')
            [CompletionResult]::new('--no-rdma', '--no-rdma', [CompletionResultType]::ParameterName, 'TCP streams only, also on an InfiniBand or RoCE path')
            [CompletionResult]::new('--passive', '--passive', [CompletionResultType]::ParameterName, 'Sample the local ports only, without traffic (no BER verdict without traffic)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document (schemas/soak.schema.json) instead of the terminal view')
            [CompletionResult]::new('--json-stream', '--json-stream', [CompletionResultType]::ParameterName, 'Print one JSON line per event (schemas/soak-event.schema.json): start, intervals, end')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'linerate;watch' {
            [CompletionResult]::new('-i', '-i', [CompletionResultType]::ParameterName, 'How often to sample (`1s`, `250ms`; at least 100 ms)')
            [CompletionResult]::new('--interval', '--interval', [CompletionResultType]::ParameterName, 'How often to sample (`1s`, `250ms`; at least 100 ms)')
            [CompletionResult]::new('--count', '--count', [CompletionResultType]::ParameterName, 'Stop after N intervals')
            [CompletionResult]::new('--listen', '--listen', [CompletionResultType]::ParameterName, 'Serve Prometheus metrics at http://ADDR:PORT/metrics while it runs, and no screen (a port alone listens on 127.0.0.1; give an address to listen elsewhere)')
            [CompletionResult]::new('--max-clients', '--max-clients', [CompletionResultType]::ParameterName, 'With --listen: the most clients served at once; more are answered 503 and closed')
            [CompletionResult]::new('--client-timeout', '--client-timeout', [CompletionResultType]::ParameterName, 'With --listen: the time a client has to send its request and read the answer')
            [CompletionResult]::new('--window', '--window', [CompletionResultType]::ParameterName, 'How far back the error counters are judged: soak''s verdict over the last TIME (between half of it and all of it)')
            [CompletionResult]::new('--root', '--root', [CompletionResultType]::ParameterName, 'Read the ports under this directory instead of `/` (a copy or a fixture tree)')
            [CompletionResult]::new('--threshold', '--threshold', [CompletionResultType]::ParameterName, 'Set a threshold of soak''s judge (repeatable, each at most once): ber, pre_fec_ber, min_bits, rcv_errors_per_bit, port_rcv_errors_per_s, link_error_recovery_per_min, xmit_wait_ticks, dip_fraction, tcp_retrans_fraction or temperature_rise_c (docs/soak.md, Thresholds)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour the terminal output')
            [CompletionResult]::new('--json-stream', '--json-stream', [CompletionResultType]::ParameterName, 'One JSON object per interval (schemas/watch-stream.schema.json) instead of the screen')
            [CompletionResult]::new('--plain', '--plain', [CompletionResultType]::ParameterName, 'One line per port per interval instead of the screen (what a pipe or a file gets)')
            [CompletionResult]::new('--bytes', '--bytes', [CompletionResultType]::ParameterName, 'Rates in bytes (GB/s = 10^9 byte/s) instead of bits (Gb/s = 10^9 bit/s)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'linerate;generate' {
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour the terminal output')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('man', 'man', [CompletionResultType]::ParameterValue, 'Write the man pages into a directory')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell''s completion script')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'linerate;generate;man' {
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour the terminal output')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'linerate;generate;completions' {
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour the terminal output')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'linerate;generate;help' {
            [CompletionResult]::new('man', 'man', [CompletionResultType]::ParameterValue, 'Write the man pages into a directory')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell''s completion script')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'linerate;generate;help;man' {
            break
        }
        'linerate;generate;help;completions' {
            break
        }
        'linerate;generate;help;help' {
            break
        }
        'linerate;setup' {
            [CompletionResult]::new('--iface', '--iface', [CompletionResultType]::ParameterName, 'Only this interface')
            [CompletionResult]::new('--renderer', '--renderer', [CompletionResultType]::ParameterName, 'The network configuration system to edit; auto finds the one in charge of the interface')
            [CompletionResult]::new('--root', '--root', [CompletionResultType]::ParameterName, 'Read and write under this directory instead of `/` (a copy or a fixture tree)')
            [CompletionResult]::new('--rollback', '--rollback', [CompletionResultType]::ParameterName, 'Restore the files of an earlier --apply, byte for byte')
            [CompletionResult]::new('--rtt-ms', '--rtt-ms', [CompletionResultType]::ParameterName, 'The round-trip time the TCP buffers are sized for (sysctl), in milliseconds')
            [CompletionResult]::new('--gbps', '--gbps', [CompletionResultType]::ParameterName, 'The rate the TCP buffers are sized for (sysctl), in Gb/s (10^9 bit/s) [default: the fastest port''s ceiling]; `linerate doctor` quotes it with the round trip it measured')
            [CompletionResult]::new('--nfs-mount', '--nfs-mount', [CompletionResultType]::ParameterName, 'NFS over RDMA: the server''s export (`server:/export`) for a client''s mount and fstab line')
            [CompletionResult]::new('--roce-priority', '--roce-priority', [CompletionResultType]::ParameterName, 'RoCE: the 802.1p priority its traffic is to use, with PFC on it (0-7)')
            [CompletionResult]::new('--roce-dscp', '--roce-dscp', [CompletionResultType]::ParameterName, 'RoCE: the DSCP its traffic is to carry, mapped to that priority (0-63); rdma_cm''s default ToS carries it with ECN-capable transport (26 → ToS 106)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour the terminal output')
            [CompletionResult]::new('--apply', '--apply', [CompletionResultType]::ParameterName, 'Write the files (root needed for `/`): backups first, all or nothing')
            [CompletionResult]::new('--restart', '--restart', [CompletionResultType]::ParameterName, 'With --apply: also run the restart command of each interface concerned')
            [CompletionResult]::new('--sm-node', '--sm-node', [CompletionResultType]::ParameterName, 'This node runs the subnet manager (opensm): only then does setup plan one')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document (schemas/setup.schema.json) instead of the terminal view')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'linerate;help' {
            [CompletionResult]::new('probe', 'probe', [CompletionResultType]::ParameterValue, 'Inventory every port with its ceiling chain and findings')
            [CompletionResult]::new('plan', 'plan', [CompletionResultType]::ParameterValue, 'Compute the ceiling chain of hardware you do not have yet')
            [CompletionResult]::new('doctor', 'doctor', [CompletionResultType]::ParameterValue, 'Explain why a link is slower than its hardware')
            [CompletionResult]::new('mem', 'mem', [CompletionResultType]::ParameterValue, 'Measure memory bandwidth: copy, read and write')
            [CompletionResult]::new('serve', 'serve', [CompletionResultType]::ParameterValue, 'Serve tests to bench, doctor and soak clients')
            [CompletionResult]::new('bench', 'bench', [CompletionResultType]::ParameterValue, 'Measure TCP, UDP, RDMA or latency to a linerate server')
            [CompletionResult]::new('disk', 'disk', [CompletionResultType]::ParameterValue, 'Measure a disk: throughput, IOPS and latency')
            [CompletionResult]::new('mesh', 'mesh', [CompletionResultType]::ParameterValue, 'Measure every link of a cluster and explain the bad ones')
            [CompletionResult]::new('soak', 'soak', [CompletionResultType]::ParameterValue, 'Judge a cable by its error counters under steady traffic')
            [CompletionResult]::new('watch', 'watch', [CompletionResultType]::ParameterValue, 'Show every port live, against its ceiling, errors judged')
            [CompletionResult]::new('generate', 'generate', [CompletionResultType]::ParameterValue, 'Write the man pages or a shell''s completion script')
            [CompletionResult]::new('setup', 'setup', [CompletionResultType]::ParameterValue, 'Print or write the configuration that makes links fast')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'linerate;help;probe' {
            break
        }
        'linerate;help;plan' {
            break
        }
        'linerate;help;doctor' {
            break
        }
        'linerate;help;mem' {
            break
        }
        'linerate;help;serve' {
            break
        }
        'linerate;help;bench' {
            break
        }
        'linerate;help;disk' {
            break
        }
        'linerate;help;mesh' {
            break
        }
        'linerate;help;soak' {
            break
        }
        'linerate;help;watch' {
            break
        }
        'linerate;help;generate' {
            [CompletionResult]::new('man', 'man', [CompletionResultType]::ParameterValue, 'Write the man pages into a directory')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell''s completion script')
            break
        }
        'linerate;help;generate;man' {
            break
        }
        'linerate;help;generate;completions' {
            break
        }
        'linerate;help;setup' {
            break
        }
        'linerate;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
