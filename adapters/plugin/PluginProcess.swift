import CloudKitWeb
import Foundation
import GatewayCore
import Logging
import NIOCore
import NIOPosix
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One running plugin: a child process with its standard input and output as a JSON-lines
/// channel, and its standard error forwarded to the log.
///
/// One request is outstanding at a time (the kit runs one operation at a time). Anything that
/// breaks the protocol (a malformed or oversized line, an answer to another request, the output
/// ending, a timeout) fails the waiting request and every later one: the caller stops the
/// process and starts a new one on its next call.
final class PluginProcess: Sendable {
    private static let spawnLock = Mutex(())
    let pid: pid_t
    private let configuration: PluginConfiguration
    private let channel: any Channel
    private let errorChannel: any Channel
    private let state = Mutex(State())
    private let exitStatus = Mutex<Int32?>(nil)

    private struct State {
        var nextID = 1
        var waiting: (id: Int, continuation: CheckedContinuation<JSONValue, any Error>)?
        var failure: PluginError?
        var notifications = 0
    }

    /// Starts the process. It is not spoken to yet.
    static func start(_ configuration: PluginConfiguration, logger: Logger) async throws -> PluginProcess {
        var input: [Int32] = [0, 0]
        var output: [Int32] = [0, 0]
        var errors: [Int32] = [0, 0]
        // Pipes are created close-on-exec atomically (pipe2), and our spawns hold one lock:
        // otherwise a process started by another thread at the same moment could inherit this
        // plugin's pipes and hold them open, and this plugin's exit would never show as the end
        // of its output.
        let pid: pid_t = try Self.spawnLock.withLock { _ in
            guard closeOnExecPipe(&input) == 0, closeOnExecPipe(&output) == 0, closeOnExecPipe(&errors) == 0 else {
                throw PluginError(
                    .startFailed, adapter: configuration.adapterName, plugin: configuration.displayName,
                    "cannot create pipes: \(String(cString: strerror(errno)))")
            }
            do {
                let pid = try spawn(configuration, stdin: input[0], stdout: output[1], stderr: errors[1])
                close(input[0])
                close(output[1])
                close(errors[1])
                return pid
            } catch {
                for descriptor in input + output + errors { close(descriptor) }
                throw error
            }
        }
        let process = PluginProcessChannels(configuration: configuration, logger: logger)
        do {
            let channel = try await NIOPipeBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(process.outputHandler())
                    }
                }
                .takingOwnershipOfDescriptors(input: output[0], output: input[1]).get()
            let errorChannel = try await NIOPipeBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(process.errorHandler())
                    }
                }
                .takingOwnershipOfDescriptor(input: errors[0]).get()
            let running = PluginProcess(pid: pid, configuration: configuration, channel: channel, errorChannel: errorChannel)
            process.attach(running)
            return running
        } catch {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            throw PluginError(.startFailed, adapter: configuration.adapterName, plugin: configuration.displayName, "cannot attach to the process's pipes: \(error)", underlying: error)
        }
    }

    private init(pid: pid_t, configuration: PluginConfiguration, channel: any Channel, errorChannel: any Channel) {
        self.pid = pid
        self.configuration = configuration
        self.channel = channel
        self.errorChannel = errorChannel
    }

    /// Whether the process has already failed (exited, broke the protocol): no request can succeed.
    var hasFailed: Bool { state.withLock { $0.failure != nil } }

    /// Whether the process has exited (it is reaped then): checked before a request, since the
    /// end of its output may not have been read yet when it died between two calls.
    var hasExited: Bool { reapIfExited() != nil }

    /// How many change notifications the plugin has sent.
    var notifications: Int { state.withLock { $0.notifications } }

    /// Sends a request and waits for its answer's `result`.
    func request(_ method: String, params: JSONValue, timeout: Duration) async throws -> JSONValue {
        var serialized = JSONWriter(capacity: 256)
        try serialized.value(params)
        return try await request(method, serializedParams: serialized.bytes, timeout: timeout)
    }

    /// Sends a request whose params are given as their JSON text and waits for its answer's
    /// `result`. The message is the serialized `{"id", "method", "params"}` object, members in
    /// sorted order.
    func request(_ method: String, serializedParams params: [UInt8], timeout: Duration) async throws -> JSONValue {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        var encoded: [UInt8] = []
        encoded.reserveCapacity(params.count + method.utf8.count + 48)
        encoded.append(contentsOf: #"{"id":"#.utf8)
        encoded.append(contentsOf: String(id).utf8)
        encoded.append(contentsOf: #","method":"#.utf8)
        JSONValue.writeString(method, into: &encoded)
        encoded.append(contentsOf: #","params":"#.utf8)
        encoded.append(contentsOf: params)
        encoded.append(contentsOf: "}\n".utf8)
        let line = Data(encoded)
        guard line.count <= configuration.maxMessageBytes else {
            throw error(.oversizedMessage, "the \(method) request would be \(line.count) bytes, more than max_message_bytes (\(configuration.maxMessageBytes)); lower max_records_per_message")
        }
        let setting = method == "hello" ? "start_timeout" : "request_timeout"
        let timedOut = error(
            .timedOut,
            "no answer to \(method) within \(timeout.formatted(.units(allowed: [.seconds, .milliseconds]))); the process was stopped (raise \(setting) if it needs longer)")
        return try await withThrowingTaskGroup(of: JSONValue?.self) { group in
            group.addTask { try await self.send(line, id: id) }
            group.addTask {
                try await Task.sleep(for: timeout)
                // Failing the process answers the waiting request with the timeout.
                self.fail(timedOut)
                return nil
            }
            defer { group.cancelAll() }
            while let next = try await group.next() {
                if let answer = next { return answer }
            }
            throw timedOut
        }
    }

    private func send(_ line: Data, id: Int) async throws -> JSONValue {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<JSONValue, any Error>) in
                let failure = state.withLock { state -> PluginError? in
                    if let failure = state.failure { return failure }
                    if state.waiting != nil {
                        return error(.unexpectedAnswer, "was sent request \(id) while another waited (a gateway bug)")
                    }
                    state.waiting = (id, continuation)
                    return nil
                }
                if let failure {
                    continuation.resume(throwing: failure)
                    return
                }
                var buffer = channel.allocator.buffer(capacity: line.count)
                buffer.writeBytes(line)
                channel.writeAndFlush(buffer).whenFailure { [self] error in
                    fail(self.error(.exited, "its standard input is closed (\(error))"))
                }
            }
        } onCancel: {
            let waiting = state.withLock { state -> CheckedContinuation<JSONValue, any Error>? in
                guard let waiting = state.waiting, waiting.id == id else { return nil }
                state.waiting = nil
                return waiting.continuation
            }
            waiting?.resume(throwing: CancellationError())
        }
    }

    /// A line from the plugin's standard output.
    func receive(_ line: [UInt8]) {
        if line.allSatisfy({ $0 == 32 || $0 == 9 || $0 == 13 }) { return }
        let message: JSONValue
        do {
            message = try JSONValue.parse(Data(line))
        } catch {
            // The parser's own words (what and at which byte), not the wire's "body" wording.
            let reason = (error.underlying as? JSONParseError).map { "\($0.reason) at byte \($0.offset)" } ?? error.message
            fail(self.error(.malformedMessage, "wrote a line of \(line.count) bytes that is not JSON: \(reason)"))
            return
        }
        guard case .object(let members) = message else {
            fail(error(.malformedMessage, "wrote a line that is not a JSON object"))
            return
        }
        if members["id"] == nil || members["id"] == .null {
            if members["method"]?.stringValue == "changed" { state.withLock { $0.notifications += 1 } }
            // Other notifications are for later protocol versions: ignored.
            return
        }
        guard let id = members["id"]?.int64Value else {
            fail(error(.malformedMessage, "wrote a message whose id is not a number"))
            return
        }
        let waiting = state.withLock { state -> CheckedContinuation<JSONValue, any Error>? in
            guard let waiting = state.waiting, Int64(waiting.id) == id else { return nil }
            state.waiting = nil
            return waiting.continuation
        }
        guard let waiting else {
            fail(error(.unexpectedAnswer, "answered request \(id), which is not the request waiting for an answer"))
            return
        }
        if let failure = members["error"], failure != .null {
            let code = failure["code"]?.stringValue ?? "error"
            let text = String((failure["message"]?.stringValue ?? "no message").prefix(500))
            waiting.resume(throwing: error(.pluginReportedError, "answered with an error: \(code): \(text)"))
        } else if let result = members["result"] {
            waiting.resume(returning: result)
        } else {
            waiting.resume(throwing: error(.malformedMessage, "answered request \(id) with neither result nor error"))
            fail(error(.malformedMessage, "answered request \(id) with neither result nor error"))
        }
    }

    /// The plugin broke the protocol or went away: everything waiting, and every later request,
    /// fails with `failure`; the process is stopped.
    func fail(_ failure: PluginError) {
        let waiting = state.withLock { state -> CheckedContinuation<JSONValue, any Error>? in
            if state.failure == nil { state.failure = failure }
            defer { state.waiting = nil }
            return state.waiting?.continuation
        }
        waiting?.resume(throwing: state.withLock { $0.failure! })
        channel.close(promise: nil)
    }

    /// The output ended.
    func outputEnded() {
        fail(error(.exited, "exited or closed its standard output"))
    }

    /// Why the process stopped answering, with its exit status when it has exited.
    func failureWithStatus(_ failure: PluginError) async -> PluginError {
        guard failure.code == .exited else { return failure }
        for _ in 0..<50 {
            if let status = reapIfExited() {
                var described = failure
                described.detail = (status >= 128 ? "was killed by signal \(status - 128)" : "exited with status \(status)")
                return described
            }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return failure
    }

    /// Stops the process: closes its input so a well-behaved plugin exits, then kills it after
    /// `grace`, and reaps it.
    func stop(grace: Duration = .seconds(2)) async {
        channel.close(promise: nil)
        let deadline = ContinuousClock.now + grace
        while ContinuousClock.now < deadline {
            if reapIfExited() != nil { break }
            try? await Task.sleep(for: .milliseconds(10))
        }
        if reapIfExited() == nil {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            if waitpid(pid, &status, 0) == pid { exitStatus.withLock { $0 = Self.decode(status) } }
        }
        errorChannel.close(promise: nil)
    }

    /// The exit status if the process has exited (reaping it), else `nil`.
    private func reapIfExited() -> Int32? {
        exitStatus.withLock { known in
            if let known { return known }
            var status: Int32 = 0
            guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
            known = Self.decode(status)
            return known
        }
    }

    private static func decode(_ status: Int32) -> Int32 {
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }

    /// The command as an absolute path: looked up in `PATH` when it names no folder, relative to
    /// the working directory otherwise; it must be an executable file.
    private static func resolve(_ configuration: PluginConfiguration, path: String) throws -> String {
        func failure(_ detail: String) -> PluginError {
            PluginError(.startFailed, adapter: configuration.adapterName, plugin: configuration.displayName, "cannot start \(configuration.command): \(detail)")
        }
        let command = configuration.command
        var isDirectory: ObjCBool = false
        if command.contains("/") {
            let base = configuration.workingDirectory ?? FileManager.default.currentDirectoryPath
            let absolute = command.hasPrefix("/") ? command : URL(fileURLWithPath: base).appendingPathComponent(command).standardizedFileURL.path
            guard FileManager.default.fileExists(atPath: absolute, isDirectory: &isDirectory) else {
                throw failure("\(absolute) does not exist (a relative command is resolved against working_directory, or the config file's folder)")
            }
            guard !isDirectory.boolValue else { throw failure("\(absolute) is a folder; name the program in it") }
            guard access(absolute, X_OK) == 0 else {
                throw failure("\(absolute) is not executable (chmod +x it, or name its interpreter as the command)")
            }
            return absolute
        }
        for folder in path.split(separator: ":") where !folder.isEmpty {
            let candidate = String(folder) + "/" + command
            if FileManager.default.fileExists(atPath: candidate, isDirectory: &isDirectory), !isDirectory.boolValue, access(candidate, X_OK) == 0 {
                return candidate
            }
        }
        throw failure("not found in PATH")
    }

    private func error(_ code: PluginError.Code, _ detail: String) -> PluginError {
        PluginError(code, adapter: configuration.adapterName, plugin: configuration.displayName, detail)
    }

    private static func spawn(_ configuration: PluginConfiguration, stdin: Int32, stdout: Int32, stderr: Int32) throws -> pid_t {
        if let directory = configuration.workingDirectory {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw PluginError(
                    .startFailed, adapter: configuration.adapterName, plugin: configuration.displayName,
                    "its working_directory \(directory) does not exist")
            }
        }
        var environment = ProcessInfo.processInfo.environment
        for (key, value) in configuration.environment { environment[key] = value }
        let executable = try resolve(configuration, path: environment["PATH"] ?? "/usr/bin:/bin")
        let spawned = ProcessSpawning.spawn(
            executable, arguments: configuration.arguments, directory: configuration.workingDirectory,
            environment: environment.map { "\($0.key)=\($0.value)" }
        ) { actions in
            posix_spawn_file_actions_adddup2(&actions, stdin, 0)
            posix_spawn_file_actions_adddup2(&actions, stdout, 1)
            posix_spawn_file_actions_adddup2(&actions, stderr, 2)
        }
        switch spawned {
        case .success(let pid): return pid
        case .failure(let failure):
            throw PluginError(
                .startFailed, adapter: configuration.adapterName, plugin: configuration.displayName,
                "cannot start \(configuration.command): \(failure.reason)", underlying: failure)
        }
    }
}

/// The handlers of a starting process, which exist before the process object does.
private final class PluginProcessChannels: Sendable {
    let configuration: PluginConfiguration
    let logger: Logger
    private let process = Mutex<PluginProcess?>(nil)
    private let early = Mutex<[[UInt8]]>([])
    private let ended = Mutex(false)

    init(configuration: PluginConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    func attach(_ running: PluginProcess) {
        let (lines, hasEnded) = process.withLock { process in
            process = running
            return (early.withLock { lines in defer { lines = [] }; return lines }, ended.withLock { $0 })
        }
        for line in lines { running.receive(line) }
        if hasEnded { running.outputEnded() }
    }

    func outputHandler() -> PluginLineHandler {
        PluginLineHandler(
            maxLineBytes: configuration.maxMessageBytes,
            onLine: { [self] line in
                let running = process.withLock { process -> PluginProcess? in
                    if process == nil { early.withLock { $0.append(line) } }
                    return process
                }
                running?.receive(line)
            },
            onOversized: { [self] count in
                let failure = PluginError(
                    .oversizedMessage, adapter: configuration.adapterName, plugin: configuration.displayName,
                    "wrote a line of more than \(configuration.maxMessageBytes) bytes (max_message_bytes); send fewer records per message")
                process.withLock { $0 }?.fail(failure)
            },
            onEnd: { [self] in
                let running = process.withLock { process -> PluginProcess? in
                    if process == nil { ended.withLock { $0 = true } }
                    return process
                }
                running?.outputEnded()
            })
    }

    func errorHandler() -> PluginLineHandler {
        var logger = self.logger
        logger[metadataKey: "adapter"] = .string(configuration.adapterName)
        logger[metadataKey: "plugin"] = .string(configuration.command)
        let tagged = logger
        return PluginLineHandler(
            maxLineBytes: 64 << 10,
            onLine: { line in
                let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                if !text.isEmpty { tagged.notice("\(text)", metadata: ["source": "plugin stderr"]) }
            },
            onOversized: { count in tagged.warning("the plugin wrote a standard-error line of more than 64 KiB; the rest of its standard error is dropped") },
            onEnd: {})
    }
}

/// glibc's `pipe2`, which Swift's Glibc module does not export (it needs `_GNU_SOURCE`).
@_silgen_name("pipe2")
private func pipe2(_ descriptors: UnsafeMutablePointer<Int32>, _ flags: Int32) -> Int32

/// A pipe whose both ends are close-on-exec from the start.
private func closeOnExecPipe(_ descriptors: inout [Int32]) -> Int32 {
    descriptors.withUnsafeMutableBufferPointer { buffer in pipe2(buffer.baseAddress!, O_CLOEXEC) }
}
