// The slice of the WebAssembly JS API that podwarden uses. @types/node 20 does not declare it
// and lib.dom would bring in browser globals that do not exist on Node.
declare namespace WebAssembly {
  interface MemoryDescriptor {
    initial: number;
    maximum?: number;
    shared?: boolean;
  }
  class Memory {
    constructor(descriptor: MemoryDescriptor);
    readonly buffer: ArrayBuffer | SharedArrayBuffer;
    grow(delta: number): number;
  }
  interface ModuleImportDescriptor {
    module: string;
    name: string;
    kind: string;
  }
  class Module {
    constructor(bytes: ArrayBufferView | ArrayBuffer);
    static imports(module: Module): ModuleImportDescriptor[];
  }
  type ExportValue = ((...args: number[]) => number | void) | Memory | object;
  type Exports = Record<string, ExportValue>;
  type Imports = Record<string, Record<string, ExportValue>>;
  class Instance {
    constructor(module: Module, imports?: Imports);
    readonly exports: Exports;
  }
}
