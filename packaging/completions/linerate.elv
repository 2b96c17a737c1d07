
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
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
            cand probe 'Inventory every network port from sysfs (no root needed), its ceiling chain, and findings'
            cand plan 'The ceiling chain for hardware you do not have yet'
            cand doctor 'Explain the gap between what a link carries and what its hardware could: with HOST, the path to a `linerate serve`; without, a self-check of this machine'
            cand mem 'Memory bandwidth: copy, read and write, one thread and all cores, per NUMA node'
            cand serve 'Serve tests to `linerate bench` clients: many at once, each bounded in memory and time'
            cand bench 'Measure TCP/UDP throughput or latency against a `linerate serve`'
            cand disk 'Measure a directory''s disk (or tmpfs, NFS, SMB mount): sequential and random read/write throughput, IOPS and latency, in a test file of its own that it deletes'
            cand generate 'Write the man pages, or a shell''s completion script, from these same definitions (for packages and installs from source)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'linerate;probe'= {
            cand --root 'Read sysfs and procfs under this directory instead of `/` (a copy or a fixture tree)'
            cand --fail-on 'Exit with status 1 when a finding of at least this severity is present'
            cand --color 'When to colour the terminal output'
            cand --json 'Print one JSON document (schemas/probe.schema.json) instead of the terminal view'
            cand -h 'Print help'
            cand --help 'Print help'
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
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'linerate;doctor'= {
            cand -p 'Server port'
            cand --port 'Server port'
            cand --report 'Also write a self-contained HTML report with charts'
            cand --fail-on 'Exit with status 1 when a finding of at least this severity is present'
            cand -B 'Local address to test from'
            cand --bind 'Local address to test from'
            cand --psk-file 'Pre-shared key file, when the server requires one'
            cand --disk 'A directory whose disk joins the storage pyramid (repeatable; default: the current directory). The first also holds the source of a disk-to-disk copy through the path'
            cand --rdma-provider 'Measure RDMA beside TCP with this libfabric provider (by default doctor does so with `verbs` when this end of the path is an InfiniBand or RoCE port)'
            cand --color 'When to colour the terminal output'
            cand --quick 'A shorter plan (about 10 s)'
            cand --thorough 'A longer plan (about a minute): longer runs, reverse multi-stream, bidirectional, UDP latency'
            cand --json 'Print one JSON document (schemas/doctor.schema.json)'
            cand --no-disk 'Leave disks out: memory and network only'
            cand --no-rdma 'Do not measure RDMA'
            cand -h 'Print help'
            cand --help 'Print help'
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
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'linerate;serve'= {
            cand -p 'TCP port for control and data connections'
            cand --port 'TCP port for control and data connections'
            cand -B 'Address to listen on (`::` for IPv6 and IPv4)'
            cand --bind 'Address to listen on (`::` for IPv6 and IPv4)'
            cand --max-tests 'Most tests running at once'
            cand --max-streams 'Most streams per test (per direction)'
            cand --max-duration 'Longest test, seconds'
            cand --max-udp-bitrate 'Highest UDP rate per stream (e.g. 10G); 0 = no limit'
            cand --max-length 'Largest read/write length a client may ask for'
            cand --max-memory 'Total buffer memory of all running tests'
            cand --psk-file 'Require clients to prove they know the key in this file (challenge-response; the key never crosses the wire)'
            cand --handshake-timeout 'Seconds a new connection has to complete its handshake'
            cand --max-pending 'Most connections in their handshake at once; more are closed immediately'
            cand --write-dir 'Accept file transfers (`bench --file`) into this directory, and nowhere else: names are single path components, existing files are never overwritten, incomplete copies removed'
            cand --max-file-size 'Largest file a client may send (with --write-dir); 0 = bounded by free space only'
            cand --color 'When to colour the terminal output'
            cand --once 'Exit after serving one test'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'linerate;bench'= {
            cand -p 'Server port'
            cand --port 'Server port'
            cand -t 'Seconds to run (default 10; with --file, the time limit of the copy, default 300)'
            cand --time 'Seconds to run (default 10; with --file, the time limit of the copy, default 300)'
            cand -P 'Parallel streams, one thread each'
            cand --parallel 'Parallel streams, one thread each'
            cand -O 'Seconds of warm-up to leave out of the totals'
            cand --omit 'Seconds of warm-up to leave out of the totals'
            cand -i 'Seconds between interval reports (0 = none)'
            cand --interval 'Seconds between interval reports (0 = none)'
            cand -l 'Bytes per write and read (TCP, default 1M for up to 2 connections, halved per doubling down to 128K), per datagram (UDP, default 1400) or per request (latency, default 1)'
            cand --length 'Bytes per write and read (TCP, default 1M for up to 2 connections, halved per doubling down to 128K), per datagram (UDP, default 1400) or per request (latency, default 1)'
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
            cand --op 'RDMA operation'
            cand --qps 'Queue pairs (connections), each on its own thread'
            cand --color 'When to colour the terminal output'
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
            cand -J 'Print one JSON document at the end (schemas/bench.schema.json)'
            cand --json 'Print one JSON document at the end (schemas/bench.schema.json)'
            cand --json-stream 'Print one JSON object per line as events happen'
            cand --no-fsync 'Do not make the copy durable (fsync) on the server before measuring the end'
            cand --remove-after 'Ask the server to delete the copy once measured (for repeated benchmarks)'
            cand --rdma 'RDMA through libfabric (bandwidth; with --latency, latency), negotiated with the server over the control connection'
            cand --sweep 'Every message size from 2 bytes to -l (default 8M) in powers of two, like perftest''s -a'
            cand --verify 'Check every byte of every RDMA message against a pattern (counts mismatches)'
            cand -h 'Print help'
            cand --help 'Print help'
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
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'linerate;generate'= {
            cand --color 'When to colour the terminal output'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
            cand man 'Write linerate.1 and one page per subcommand (linerate-doctor.1, ...) into DIR, creating it if needed; existing pages of the same names are replaced'
            cand completions 'Print the completion script for SHELL on stdout'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'linerate;generate;man'= {
            cand --color 'When to colour the terminal output'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'linerate;generate;completions'= {
            cand --color 'When to colour the terminal output'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'linerate;generate;help'= {
            cand man 'Write linerate.1 and one page per subcommand (linerate-doctor.1, ...) into DIR, creating it if needed; existing pages of the same names are replaced'
            cand completions 'Print the completion script for SHELL on stdout'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'linerate;generate;help;man'= {
        }
        &'linerate;generate;help;completions'= {
        }
        &'linerate;generate;help;help'= {
        }
        &'linerate;help'= {
            cand probe 'Inventory every network port from sysfs (no root needed), its ceiling chain, and findings'
            cand plan 'The ceiling chain for hardware you do not have yet'
            cand doctor 'Explain the gap between what a link carries and what its hardware could: with HOST, the path to a `linerate serve`; without, a self-check of this machine'
            cand mem 'Memory bandwidth: copy, read and write, one thread and all cores, per NUMA node'
            cand serve 'Serve tests to `linerate bench` clients: many at once, each bounded in memory and time'
            cand bench 'Measure TCP/UDP throughput or latency against a `linerate serve`'
            cand disk 'Measure a directory''s disk (or tmpfs, NFS, SMB mount): sequential and random read/write throughput, IOPS and latency, in a test file of its own that it deletes'
            cand generate 'Write the man pages, or a shell''s completion script, from these same definitions (for packages and installs from source)'
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
        &'linerate;help;generate'= {
            cand man 'Write linerate.1 and one page per subcommand (linerate-doctor.1, ...) into DIR, creating it if needed; existing pages of the same names are replaced'
            cand completions 'Print the completion script for SHELL on stdout'
        }
        &'linerate;help;generate;man'= {
        }
        &'linerate;help;generate;completions'= {
        }
        &'linerate;help;help'= {
        }
    ]
    $completions[$command]
}
