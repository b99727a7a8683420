// A list of listeners: add one (and get the function that removes it), call them all.
export class Listeners<T> {
  private readonly list: ((e: T) => void)[] = [];

  /** Calls `l` with every event from now on; returns a function that stops it. */
  add(l: (e: T) => void): () => void {
    this.list.push(l);
    return () => {
      const i = this.list.indexOf(l);
      if (i >= 0) this.list.splice(i, 1);
    };
  }

  emit(e: T): void {
    for (const l of this.list) l(e);
  }
}
