// The Python extension's active environment, when that extension is installed (it is optional).
import * as vscode from "vscode";

const PYTHON_EXTENSION = "ms-python.python";

interface EnvironmentPath {
  id: string;
  path: string;
}

interface PythonApi {
  environments?: {
    getActiveEnvironmentPath(resource?: vscode.Uri): EnvironmentPath | undefined;
    resolveEnvironment(env: EnvironmentPath | string): Promise<{ executable?: { uri?: vscode.Uri } } | undefined>;
    onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
  };
}

async function api(): Promise<PythonApi | undefined> {
  const extension = vscode.extensions.getExtension<PythonApi>(PYTHON_EXTENSION);
  if (!extension) {
    return undefined;
  }
  try {
    return extension.isActive ? extension.exports : await extension.activate();
  } catch {
    return undefined;
  }
}

/** The executable of the active environment for `resource`, or undefined without the extension. */
export async function activeInterpreter(resource: vscode.Uri | undefined, log: vscode.LogOutputChannel): Promise<string | undefined> {
  const environments = (await api())?.environments;
  if (!environments) {
    return undefined;
  }
  try {
    const active = environments.getActiveEnvironmentPath(resource);
    if (!active) {
      return undefined;
    }
    const resolved = await environments.resolveEnvironment(active);
    return resolved?.executable?.uri?.fsPath ?? active.path;
  } catch (error) {
    log.warn(`the Python extension did not say which environment is active: ${String(error)}`);
    return undefined;
  }
}

/** Calls `listener` when the user picks another environment; a no-op without the Python extension. */
export async function onInterpreterChange(listener: () => void): Promise<vscode.Disposable | undefined> {
  const environments = (await api())?.environments;
  return environments?.onDidChangeActiveEnvironmentPath(() => listener());
}
