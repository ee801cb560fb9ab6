import Foundation
import GatewayTesting
import PostgresNIO
import PostgresSupport
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The PostgreSQL server tests run against.
///
/// With `GATEWAY_TEST_POSTGRES_URL` set (a login allowed to create databases), that server is
/// used. Otherwise the first call starts a private cluster for this test process with Debian's
/// `initdb` and `pg_ctl` on a free loopback port (as the `postgres` user when the tests run as
/// root), and stops it when the process exits. Each test gets a database of its own from
/// ``freshDatabase(_:)``. Without PostgreSQL the call fails saying how to install it, so a test
/// never skips in silence.
public enum PostgresTestServer {
    /// The variable naming an existing server to use instead of a private cluster.
    public static let urlVariable = "GATEWAY_TEST_POSTGRES_URL"

    /// The administrative endpoint of the server, starting the private cluster when needed.
    public static func endpoint() async throws -> PostgresEndpoint {
        try await ClusterHolder.shared.endpoint()
    }

    /// A new, empty database on the server, named after `label`.
    public static func freshDatabase(_ label: String) async throws -> PostgresEndpoint {
        try await freshDatabase(label, on: try await endpoint())
    }

    /// Runs a SQL script (such as a `pg_dump` output) on `endpoint` with `psql`, stopping at the
    /// first error.
    public static func runScript(_ path: String, on endpoint: PostgresEndpoint) async throws {
        try await runClient(
            "psql", arguments: ["-q", "-v", "ON_ERROR_STOP=1", "-d", endpoint.database, "-f", path], on: endpoint, doing: "running \(path)")
    }

    /// Dumps `table` (schema-qualified) of `endpoint` as an operator's backup does, with
    /// `pg_dump --clean`: restored with ``runScript(_:on:)``, it drops the table and creates it
    /// again with its rows and then its triggers.
    public static func dump(table: String, of endpoint: PostgresEndpoint, to path: String) async throws {
        try await runClient("pg_dump", arguments: ["--clean", "-t", table, "-f", path, endpoint.database], on: endpoint, doing: "dumping \(table)")
    }

    /// Runs one of PostgreSQL's client programs against `endpoint`, failing with its output.
    private static func runClient(_ program: String, arguments: [String], on endpoint: PostgresEndpoint, doing what: String) async throws {
        guard let executable = PostgresTestCluster.program(program) else {
            throw ConformanceFailure("\(program) was not found next to PostgreSQL's server programs or on PATH; install Debian's postgresql-client")
        }
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("\(program)-\(UUID().uuidString).log").path
        defer { try? FileManager.default.removeItem(atPath: log) }
        let child = try ChildProcess(
            executable, arguments: ["-h", endpoint.host, "-p", "\(endpoint.port)", "-U", endpoint.username] + arguments,
            environment: ["PATH": "/usr/bin:/bin", "LANG": "C", "PGPASSWORD": endpoint.password ?? ""], standardOutput: log, standardError: log)
        guard try await child.wait(timeout: .seconds(120)) == 0 else {
            throw ConformanceFailure("\(program) failed \(what):\n\((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        }
    }

    /// A new, empty database on the server of `admin`, named after `label`.
    public static func freshDatabase(_ label: String, on admin: PostgresEndpoint) async throws -> PostgresEndpoint {
        let safe = label.lowercased().map { $0.isLetter || $0.isNumber ? $0 : "_" }
        let name = "t_" + String(safe.prefix(30)) + "_" + UUID().uuidString.prefix(8).lowercased()
        try await PostgresConnectionPool.execute(["CREATE DATABASE \"\(name)\""], on: admin, doing: "creating test database \(name)")
        return admin.with(database: name)
    }
}

/// Starts the cluster once per process; concurrent first callers share one start.
private actor ClusterHolder {
    static let shared = ClusterHolder()
    private var starting: Task<PostgresEndpoint, any Error>?

    func endpoint() async throws -> PostgresEndpoint {
        if let starting { return try await starting.value }
        let task = Task<PostgresEndpoint, any Error> {
            if let url = ProcessInfo.processInfo.environment[PostgresTestServer.urlVariable], !url.isEmpty {
                return try PostgresEndpoint(url: url)
            }
            return try await PostgresTestCluster.start().endpoint
        }
        starting = task
        return try await task.value
    }
}

/// A throwaway PostgreSQL cluster in a temporary folder, on a loopback port of its own, that a
/// test may stop (as a crash would, with `-m immediate`) and start again on the same port.
/// Every cluster still running is stopped when the process exits.
public final class PostgresTestCluster: Sendable {
    /// The administrative endpoint (database `postgres`, user `gateway`, no password).
    public let endpoint: PostgresEndpoint
    let programs: String
    let data: String
    let folder: String
    let runAs: [String]
    let options: String

    private static let running = Mutex<[String: PostgresTestCluster]>([:])
    private static let exitHandler = Mutex(false)

    private init(endpoint: PostgresEndpoint, programs: String, data: String, folder: String, runAs: [String], options: String) {
        self.endpoint = endpoint
        self.programs = programs
        self.data = data
        self.folder = folder
        self.runAs = runAs
        self.options = options
    }

    /// Creates a cluster with `initdb` and starts it on a free port.
    /// - Throws: `ConformanceFailure` saying how to install PostgreSQL when its programs are missing.
    /// - Parameter durableCommits: whether a commit waits for its write-ahead log to be written,
    ///   so that a cluster stopped with `-m immediate` keeps every transaction it confirmed (off by
    ///   default: tests that never crash the server run faster without).
    public static func start(durableCommits: Bool = false) async throws -> PostgresTestCluster {
        guard let bin = serverPrograms() else {
            throw ConformanceFailure(
                "PostgreSQL's server programs (initdb, pg_ctl) were not found in /usr/lib/postgresql/*/bin or on PATH. "
                    + "Install them (Debian: apt-get install postgresql) or set \(PostgresTestServer.urlVariable) "
                    + "to a server where the login may create databases.")
        }
        let runAs = try userPrefix()
        let folder = "/tmp/gateway-postgres-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        if !runAs.isEmpty, let user = getpwnam("postgres") {
            chown(folder, user.pointee.pw_uid, user.pointee.pw_gid)
        }
        let data = folder + "/data"
        try await run(
            runAs + ["\(bin)/initdb", "-D", data, "-U", "gateway", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync"],
            log: folder + "/initdb.log", what: "initdb")

        var lastError: (any Error)?
        for _ in 0..<3 {
            let port = try LoopbackPort.free()
            let options = [
                "-c listen_addresses=127.0.0.1", "-p \(port)", "-c unix_socket_directories=\(folder)", "-c fsync=off",
                "-c synchronous_commit=\(durableCommits ? "on" : "off")", "-c full_page_writes=off", "-c max_connections=400",
            ].joined(separator: " ")
            let cluster = PostgresTestCluster(
                endpoint: PostgresEndpoint(host: "127.0.0.1", port: port, username: "gateway", database: "postgres"), programs: bin,
                data: data, folder: folder, runAs: runAs, options: options)
            do {
                try await cluster.start()
                try await cluster.stopWhenThisProcessEnds()
                return cluster
            } catch {
                lastError = error
            }
        }
        throw lastError ?? ConformanceFailure("the private PostgreSQL cluster did not start")
    }

    /// Starts the (stopped) cluster again, on its port.
    public func start() async throws {
        try await Self.run(
            runAs + ["\(programs)/pg_ctl", "-D", data, "-l", folder + "/server.log", "-w", "-t", "60", "-o", options, "start"],
            log: folder + "/pg_ctl.log", what: "pg_ctl start")
        Self.running.withLock { $0[folder] = self }
        Self.exitHandler.withLock { installed in
            guard !installed else { return }
            installed = true
            atexit { PostgresTestCluster.stopAllAtExit() }
        }
    }

    /// Starts a watcher in its own session that stops the cluster and deletes its folder once
    /// this process is gone: `atexit` does not run when a test run or harness is killed (a
    /// timeout, SIGKILL), and a server must not outlive the run that started it. The watcher looks
    /// for this process every second; it is a separate program, so it polls.
    private func stopWhenThisProcessEnds() async throws {
        let stop = (runAs + ["\(programs)/pg_ctl", "-D", data, "-m", "immediate", "-w", "stop"]).map(Self.shellWord).joined(separator: " ")
        let script = "while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done; \(stop) >/dev/null 2>&1; rm -rf \(Self.shellWord(folder))"
        guard let setsid = ["/usr/bin/setsid", "/bin/setsid"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else { return }
        let child = try ChildProcess(
            setsid, arguments: ["-f", "/bin/sh", "-c", script], environment: ["PATH": "/usr/bin:/bin:/usr/sbin:/sbin"],
            standardOutput: "/dev/null", standardError: "/dev/null")
        _ = try await child.wait(timeout: .seconds(30))
    }

    /// `word` quoted for /bin/sh.
    private static func shellWord(_ word: String) -> String {
        "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    /// Stops the cluster. `immediately` stops it as a crash would: connections are cut, and the
    /// next start recovers from the write-ahead log.
    public func stop(immediately: Bool = true) async throws {
        Self.running.withLock { $0[folder] = nil }
        try await Self.run(
            runAs + ["\(programs)/pg_ctl", "-D", data, "-m", immediately ? "immediate" : "fast", "-w", "stop"],
            log: folder + "/pg_ctl.log", what: "pg_ctl stop")
    }

    /// Stops the cluster and deletes its folder.
    public func destroy() async {
        try? await stop()
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// A new, empty database on the cluster, named after `label`.
    public func freshDatabase(_ label: String) async throws -> PostgresEndpoint {
        try await PostgresTestServer.freshDatabase(label, on: endpoint)
    }

    /// Stops every running cluster synchronously; runs from `atexit`.
    static func stopAllAtExit() {
        for cluster in running.withLock({ Array($0.values) }) {
            let command = cluster.runAs + [cluster.programs + "/pg_ctl", "-D", cluster.data, "-m", "immediate", "-w", "stop"]
            if let child = try? ChildProcess(command[0], arguments: Array(command.dropFirst())) {
                var status: Int32 = 0
                _ = waitpid(child.pid, &status, 0)
            }
            try? FileManager.default.removeItem(atPath: cluster.folder)
        }
    }

    /// A PostgreSQL program: next to the server programs, else on PATH.
    static func program(_ name: String) -> String? {
        if let folder = serverPrograms(), FileManager.default.isExecutableFile(atPath: "\(folder)/\(name)") { return "\(folder)/\(name)" }
        for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":")
        where FileManager.default.isExecutableFile(atPath: "\(folder)/\(name)") {
            return "\(folder)/\(name)"
        }
        return nil
    }

    /// The folder with initdb and pg_ctl: the newest Debian version, else PATH.
    private static func serverPrograms() -> String? {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [])
            .compactMap { Int($0) }.sorted(by: >)
        for version in versions where FileManager.default.isExecutableFile(atPath: "\(root)/\(version)/bin/initdb") {
            return "\(root)/\(version)/bin"
        }
        for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
        where FileManager.default.isExecutableFile(atPath: "\(folder)/initdb") && FileManager.default.isExecutableFile(atPath: "\(folder)/pg_ctl") {
            return String(folder)
        }
        return nil
    }

    /// PostgreSQL refuses to run as root: as root, commands run as the `postgres` user.
    private static func userPrefix() throws -> [String] {
        guard geteuid() == 0 else { return [] }
        guard getpwnam("postgres") != nil else {
            throw ConformanceFailure(
                "the tests run as root and there is no 'postgres' user to run the PostgreSQL server as; "
                    + "install Debian's postgresql package (it creates the user) or set \(PostgresTestServer.urlVariable)")
        }
        for runuser in ["/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"] where FileManager.default.isExecutableFile(atPath: runuser) {
            return [runuser, "-u", "postgres", "--"]
        }
        throw ConformanceFailure("the tests run as root but runuser (util-linux) is missing; install util-linux or run the tests as another user")
    }

    private static func run(_ command: [String], log: String, what: String) async throws {
        let environment = ["PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "LANG": "C", "LC_ALL": "C"]
        let child = try ChildProcess(command[0], arguments: Array(command.dropFirst()), environment: environment, standardOutput: log, standardError: log)
        let status = try await child.wait(timeout: .seconds(120))
        guard status == 0 else {
            let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            throw ConformanceFailure("\(what) failed with status \(status):\n\(output)")
        }
    }
}
