// The package ships no types: what its one function returns, as its README describes it.
declare module 'parse-prometheus-text-format' {
  interface PrometheusSample {
    value?: string;
    labels?: Record<string, string>;
    buckets?: Record<string, string>;
    quantiles?: Record<string, string>;
    count?: string;
    sum?: string;
  }
  interface PrometheusFamily {
    name: string;
    help: string;
    type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED';
    metrics: PrometheusSample[];
  }
  function parsePrometheusTextFormat(text: string): PrometheusFamily[];
  // biome-ignore lint/style/noDefaultExport: the package's CommonJS export, as an ES default import sees it.
  export default parsePrometheusTextFormat;
}
