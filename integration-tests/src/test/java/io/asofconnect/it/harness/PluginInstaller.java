package io.asofconnect.it.harness;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Enumeration;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;

/** Unzips the real plugin archive into a fresh plugin.path directory, as a user installing it would. */
public final class PluginInstaller {

    private PluginInstaller() {
    }

    /** @return the plugin.path directory (the archive's top folder is inside it) */
    public static Path install(Path zip, Path pluginPath) {
        try (ZipFile archive = new ZipFile(zip.toFile())) {
            Files.createDirectories(pluginPath);
            Path root = pluginPath.toAbsolutePath().normalize();
            Enumeration<? extends ZipEntry> entries = archive.entries();
            while (entries.hasMoreElements()) {
                ZipEntry entry = entries.nextElement();
                Path target = root.resolve(entry.getName()).normalize();
                if (!target.startsWith(root)) {
                    throw new IllegalStateException("Plugin archive " + zip + " has an entry outside its root: "
                            + entry.getName());
                }
                if (entry.isDirectory()) {
                    Files.createDirectories(target);
                } else {
                    Files.createDirectories(target.getParent());
                    try (InputStream in = archive.getInputStream(entry)) {
                        Files.copy(in, target, StandardCopyOption.REPLACE_EXISTING);
                    }
                }
            }
            return root;
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot unpack the plugin archive " + zip + " into " + pluginPath, e);
        }
    }
}
