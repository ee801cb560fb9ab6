/// The config `gateway init` writes: the embedded cloud and a commented SQLite adapter.
public enum StarterConfig {
    public static let text = """
        # Sync Gateway configuration. Every key is documented in docs/configuration.md.
        gateway:
          state_dir: .gateway              # lock, device id, embedded cloud
          merge_policy: merge              # server | client | merge | custom
          merge_prefers: server            # who wins a field both sides changed
          batch_size: 200
          sync_interval: 60s

        cloud:
          kind: embedded                   # the cloud in one SQLite file under state_dir

        adapters: []
        # adapters:
        #   - name: app
        #     kind: sqlite
        #     path: app.sqlite             # an existing database; other programs may write it
        #     zone: AppZone
        #     tables:
        #       - table: notes
        #         record_type: Note        # default: the table name
        #         exclude: [local_only_column]

        """
}
