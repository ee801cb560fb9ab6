import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Starting a program with `posix_spawn`, shared by the plugin supervisor and the test kit's
/// `ChildProcess` (Foundation's `Process` can miss exits on Linux when many children end at once).
package enum ProcessSpawning {
    /// Starts `executable` with `arguments` and `environment` (`NAME=value` entries) in
    /// `directory` (this process's when `nil`); `setUp` adds the file actions (descriptors).
    /// The child keeps only the descriptors below `keptBelow` (standard input, output and error,
    /// and any `setUp` placed there); every other descriptor of this process is closed in it.
    /// Returns the child's pid, or why it could not start.
    package static func spawn(
        _ executable: String, arguments: [String], directory: String?, environment: [String], keptBelow: Int32 = 3,
        setUp: (inout posix_spawn_file_actions_t) -> Void
    ) -> Result<pid_t, SpawnFailure> {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        setUp(&actions)
        closeInheritedDescriptors(from: keptBelow, in: &actions)
        // glibc's posix_spawn_file_actions_addchdir_np is not visible to Swift; env(1) changes
        // the folder and then execs the program.
        let program = directory == nil ? executable : "/usr/bin/env"
        let programArguments = directory.map { ["-C", $0, executable] + arguments } ?? arguments
        let argv = ([program] + programArguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, program, &actions, nil, argv, envp)
        return result == 0 ? .success(pid) : .failure(SpawnFailure(code: result))
    }

    /// Closes, in the child, every descriptor from `first` up.
    ///
    /// SwiftNIO opens its sockets without close-on-exec, so without this a child inherits the
    /// gateway's PostgreSQL connections and listening sockets. The server then never sees a
    /// connection close while the child lives: its backend stays, and a session-level advisory
    /// lock released by closing that connection stays held by an unrelated plugin process.
    /// glibc 2.34 and later have `posix_spawn_file_actions_addclosefrom_np`, which Swift's Glibc
    /// module does not declare; it is looked up by name. Older C libraries leave descriptors as
    /// they are.
    private static func closeInheritedDescriptors(from first: Int32, in actions: inout posix_spawn_file_actions_t) {
        #if canImport(Glibc)
        guard let closeFrom = addCloseFrom else { return }
        _ = closeFrom(&actions, first)
        #endif
    }

    #if canImport(Glibc)
    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private static let addCloseFrom: AddCloseFrom? = {
        // A null handle is glibc's RTLD_DEFAULT: the symbol as the program's libraries define it.
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: AddCloseFrom.self)
    }()
    #endif
}

/// A `posix_spawn` that failed, with its `errno`.
package struct SpawnFailure: Error {
    package let code: Int32
    /// The system's text for the code ("No such file or directory").
    package var reason: String { String(cString: strerror(code)) }
}
