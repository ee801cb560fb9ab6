import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A minimal HTTP/1.1 client for a server on 127.0.0.1, with a hard time limit on every call.
///
/// Tests use it instead of `URLSession`, whose async calls on Linux have been seen to never
/// return, which leaves a whole test run hanging. Each request uses its own connection
/// (`Connection: close`) on its own thread, so a stuck server costs one thread for at most
/// `timeout`, never a thread of the cooperative pool.
public enum LoopbackHTTP {
    /// What the server answered.
    public struct Response: Sendable {
        /// The HTTP status code.
        public var status: Int
        /// Header names lowercased.
        public var headers: [String: String]
        /// The body as received.
        public var body: Data

        /// The body as UTF-8 text.
        public var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// Sends one request to `127.0.0.1:port` and reads the whole answer.
    public static func send(
        _ method: String, port: Int, path: String, headers: [String: String] = [:], body: Data = Data(),
        timeout: Duration = .seconds(60)
    ) async throws -> Response {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                continuation.resume(
                    with: Result { try exchange(method, port: port, path: path, headers: headers, body: body, timeout: timeout) })
            }
            thread.start()
        }
    }

    private static func exchange(
        _ method: String, port: Int, path: String, headers: [String: String], body: Data, timeout: Duration
    ) throws -> Response {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw failure("socket", port: port) }
        defer { close(socket) }
        var limit = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(socket, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))

        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw failure("connect", port: port) }

        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\nContent-Length: \(body.count)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        var request = Data(head.utf8)
        request.append(body)
        try request.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(socket, buffer.baseAddress! + offset, buffer.count - offset)
                guard written > 0 else { throw failure("send", port: port) }
                offset += written
            }
        }

        var answer = Data()
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = read(socket, &chunk, chunk.count)
            if count == 0 { break }
            guard count > 0 else { throw failure("read (no answer within \(timeout))", port: port) }
            answer.append(contentsOf: chunk[0..<count])
        }
        return try parse(answer, port: port)
    }

    private static func parse(_ answer: Data, port: Int) throws -> Response {
        guard let end = answer.firstRange(of: Data("\r\n\r\n".utf8)) else {
            throw ConformanceFailure("127.0.0.1:\(port) closed the connection before a complete HTTP head")
        }
        let lines = String(decoding: answer[answer.startIndex..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else {
            throw ConformanceFailure("127.0.0.1:\(port) answered with a malformed status line")
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var body = Data(answer[end.upperBound...])
        if headers["transfer-encoding"]?.lowercased() == "chunked" { body = try dechunk(body, port: port) }
        return Response(status: status, headers: headers, body: body)
    }

    private static func dechunk(_ encoded: Data, port: Int) throws -> Data {
        var body = Data()
        var rest = encoded[...]
        while let lineEnd = rest.firstRange(of: Data("\r\n".utf8)) {
            let sizeText = String(decoding: rest[rest.startIndex..<lineEnd.lowerBound], as: UTF8.self)
            guard let size = Int(sizeText.split(separator: ";").first ?? "", radix: 16) else {
                throw ConformanceFailure("127.0.0.1:\(port) sent a malformed chunk size")
            }
            if size == 0 { return body }
            let start = lineEnd.upperBound
            guard rest.endIndex - start >= size + 2 else { throw ConformanceFailure("127.0.0.1:\(port) sent a truncated chunk") }
            body.append(rest[start..<start + size])
            rest = rest[(start + size + 2)...]
        }
        throw ConformanceFailure("127.0.0.1:\(port) ended a chunked body without its last chunk")
    }

    private static func failure(_ step: String, port: Int) -> ConformanceFailure {
        ConformanceFailure("HTTP to 127.0.0.1:\(port): \(step) failed: \(String(cString: strerror(errno)))")
    }
}
