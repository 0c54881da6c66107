import Foundation
import PackagePlugin

/// Embeds a target's `Scripts/` and `Resources/` files (the Lua scripts, the OpenAPI document, the browser client and
/// the console) in its code, as `EmbeddedResources`, so that the `statusd` binary needs no resource bundle beside it:
/// copied alone (`install -m 0755 statusd /usr/local/bin`, a container layer) it runs as built.
@main
struct EmbedResources: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        guard let target = target as? SourceModuleTarget else { return [] }
        let directory = target.directoryURL
        var inputs: [URL] = []
        for folder in ["Scripts", "Resources"] {
            let url = directory.appending(path: folder)
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: url.path) else { continue }
            inputs += names.filter { !$0.hasPrefix(".") }.sorted().map { url.appending(path: $0) }
        }
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedResources.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(inputs.count) resource files of \(target.name)",
                executable: try context.tool(named: "EmbedResourcesTool").url,
                arguments: [output.path, directory.path] + inputs.map(\.path),
                inputFiles: inputs,
                outputFiles: [output]
            )
        ]
    }
}
