import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Chromium without a window, driven over the DevTools protocol through a pipe
/// (`--remote-debugging-pipe`: commands go to the browser's descriptor 3, answers and events
/// come back on 4, each a JSON object ended by a NUL byte). Tests use it to load a page, read
/// what it shows, fill in and press what an operator would, and take screenshots.
///
/// Not `Sendable`: one test drives it from one task. Needs Debian's `chromium` (or `GATEWAY_TEST_CHROMIUM` naming another build).
public final class HeadlessBrowser {
    private let process: ChildProcess
    private let commands: FileHandle
    private let answers: Int32
    private let profile: URL
    private var buffer = Data()
    private var nextID = 0
    private var session = ""

    /// The browser's executable, or `nil` when none is installed.
    public static var executable: String? {
        if let chosen = ProcessInfo.processInfo.environment["GATEWAY_TEST_CHROMIUM"] { return chosen }
        return ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Starts the browser with one blank page of `width` × `height` CSS pixels.
    public init(width: Int = 1100, height: Int = 1400) async throws {
        guard let executable = Self.executable else {
            throw ConformanceFailure("no Chromium to drive: install Debian's chromium (apt-get install chromium), or set GATEWAY_TEST_CHROMIUM")
        }
        profile = FileManager.default.temporaryDirectory.appendingPathComponent("browser-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: profile, withIntermediateDirectories: true)
        var toBrowser: [Int32] = [0, 0]
        var fromBrowser: [Int32] = [0, 0]
        guard pipe(&toBrowser) == 0, pipe(&fromBrowser) == 0 else { throw ConformanceFailure("cannot make pipes for the browser") }
        process = try ChildProcess(
            executable,
            arguments: [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--remote-debugging-pipe",
                "--user-data-dir=\(profile.path)", "--window-size=\(width),\(height)", "--hide-scrollbars", "about:blank",
            ],
            standardError: profile.appendingPathComponent("browser.log").path, descriptors: [3: toBrowser[0], 4: fromBrowser[1]])
        close(toBrowser[0])
        close(fromBrowser[1])
        commands = FileHandle(fileDescriptor: toBrowser[1], closeOnDealloc: true)
        answers = fromBrowser[0]
        _ = fcntl(answers, F_SETFL, fcntl(answers, F_GETFL) | O_NONBLOCK)

        let targets = try await send("Target.getTargets", [:], toBrowser: true)
        let infos = (targets["targetInfos"] as? [[String: Any]]) ?? []
        guard let page = infos.first(where: { $0["type"] as? String == "page" })?["targetId"] as? String else {
            throw ConformanceFailure("the browser opened no page: \(infos)")
        }
        let attached = try await send("Target.attachToTarget", ["targetId": page, "flatten": true], toBrowser: true)
        session = attached["sessionId"] as? String ?? ""
        _ = try await send("Page.enable", [:])
    }

    deinit {
        process.kill()
        close(answers)
        try? FileManager.default.removeItem(at: profile)
    }

    /// Opens `url` and waits until it has loaded.
    public func open(_ url: String) async throws {
        _ = try await send("Page.navigate", ["url": url])
        try await waitUntil("the page \(url) loads") { try await self.evaluate("document.readyState") as? String == "complete" }
    }

    /// Runs `expression` in the page and returns its value (JSON types).
    @discardableResult
    public func evaluate(_ expression: String) async throws -> Any? {
        let answer = try await send("Runtime.evaluate", ["expression": expression, "returnByValue": true, "awaitPromise": true])
        if let exception = answer["exceptionDetails"] { throw ConformanceFailure("the page threw evaluating \(expression): \(exception)") }
        return (answer["result"] as? [String: Any])?["value"]
    }

    /// Waits up to `timeout` for `condition`, checking every 100 ms.
    public func waitUntil(_ what: String, timeout: Duration = .seconds(30), _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw ConformanceFailure("\(what) did not happen within \(timeout)")
    }

    /// A PNG of the page as shown.
    public func screenshot() async throws -> Data {
        let answer = try await send("Page.captureScreenshot", ["format": "png"])
        guard let text = answer["data"] as? String, let data = Data(base64Encoded: text) else { throw ConformanceFailure("the browser sent no screenshot") }
        return data
    }

    /// Sends one command and returns its result, skipping events meanwhile.
    private func send(_ method: String, _ parameters: [String: Any], toBrowser: Bool = false) async throws -> [String: Any] {
        nextID += 1
        let id = nextID
        var message: [String: Any] = ["id": id, "method": method, "params": parameters]
        if !toBrowser { message["sessionId"] = session }
        try commands.write(contentsOf: try JSONSerialization.data(withJSONObject: message) + Data([0]))
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            while let end = buffer.firstIndex(of: 0) {
                let line = buffer[buffer.startIndex..<end]
                buffer = Data(buffer[(end + 1)...])
                guard let answer = try JSONSerialization.jsonObject(with: line) as? [String: Any], answer["id"] as? Int == id else { continue }
                if let error = answer["error"] { throw ConformanceFailure("the browser refused \(method): \(error)") }
                return answer["result"] as? [String: Any] ?? [:]
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = read(answers, &chunk, chunk.count)
            if count > 0 {
                buffer.append(contentsOf: chunk[0..<count])
            } else if count == 0 {
                throw ConformanceFailure("the browser closed its pipe; its log: \((try? String(contentsOf: profile.appendingPathComponent("browser.log"), encoding: .utf8)) ?? "")")
            } else {
                try await Task.sleep(for: .milliseconds(5))
            }
        }
        throw ConformanceFailure("the browser did not answer \(method) within 60 s")
    }
}
