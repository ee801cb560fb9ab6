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
    /// Returns the child's pid, or why it could not start.
    package static func spawn(
        _ executable: String, arguments: [String], directory: String?, environment: [String],
        setUp: (inout posix_spawn_file_actions_t) -> Void
    ) -> Result<pid_t, SpawnFailure> {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        setUp(&actions)
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

}

/// A `posix_spawn` that failed, with its `errno`.
package struct SpawnFailure: Error {
    package let code: Int32
    /// The system's text for the code ("No such file or directory").
    package var reason: String { String(cString: strerror(code)) }
}
