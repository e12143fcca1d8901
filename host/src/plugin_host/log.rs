//! A plugin's log lines, written with the identity of the object it reconciles. They were escaped and
//! rate-limited before they get here (`sandbox::log_guard`, where the sandbox receives them).

use kuberay_plugin_sdk::LogLevel;

use super::PluginHost;

impl PluginHost {
    /// Writes one of the plugin's log lines, with its plugin, namespace and name.
    pub(super) fn write_log(&self, level: LogLevel, message: &str, fields: &[(String, String)]) {
        let fields: Vec<String> = fields.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let fields = fields.join(" ");
        let (plugin, primary) = (self.plugin(), self.primary());
        let (namespace, name) = (&primary.namespace, &primary.name);
        match level {
            LogLevel::Trace => {
                tracing::trace!(target: "plugin", %plugin, %namespace, %name, %fields, "{message}")
            }
            LogLevel::Debug => {
                tracing::debug!(target: "plugin", %plugin, %namespace, %name, %fields, "{message}")
            }
            LogLevel::Info => {
                tracing::info!(target: "plugin", %plugin, %namespace, %name, %fields, "{message}")
            }
            LogLevel::Warn => {
                tracing::warn!(target: "plugin", %plugin, %namespace, %name, %fields, "{message}")
            }
            LogLevel::Error => {
                tracing::error!(target: "plugin", %plugin, %namespace, %name, %fields, "{message}")
            }
        }
    }
}
