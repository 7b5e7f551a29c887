# Speedup over cuSPARSE per matrix: written by sparserl; run `gnuplot speedup_bars.gp` to redraw.
set terminal pngcairo noenhanced size 900,560 font 'sans,10'
set output '/work/main/docs/examples/bench-spmv-h100/plots/speedup_bars.png'
set title 'Speedup over cuSPARSE per matrix (above 1: faster; no bar: no correct kernel)'
set ylabel 'speedup (cuSPARSE time / kernel time)'
set logscale y
set yrange [0.039013676267038284:4.802083333333333]
set ytics ('0.05x' 0.05, '0.1x' 0.1, '0.2x' 0.2, '0.3x' 0.3, '0.5x' 0.5, '0.7x' 0.7, '1x' 1.0, '1.5x' 1.5, '2x' 2.0, '3x' 3.0)
set xrange [-1:11]
set grid ytics
set key outside right top
set style fill solid 0.85 border -1
set bmargin 10
set xtics rotate by 60 right font ',8' ('bcspwr01' 0, 'bfwa62' 1, 'bcspwr03' 2, 'pts5ldd03' 3, 'test_FW_2003' 4, 'temp' 5, 'lp_e226' 6, 'adder_dcop_05' 7, 'bp_1200' 8, 'nnc1374' 9, 'bcspwr08' 10)
plot '/work/main/docs/examples/bench-spmv-h100/plots/speedup_bars.dat' index 0 using 1:2:3:4:(1):2 with boxxyerror lc rgb '#0072B2' title 'template', \
     '/work/main/docs/examples/bench-spmv-h100/plots/speedup_bars.dat' index 1 using 1:2:3:4:(1):2 with boxxyerror lc rgb '#D55E00' title 'sft', \
     '/work/main/docs/examples/bench-spmv-h100/plots/speedup_bars.dat' index 2 using 1:2:3:4:(1):2 with boxxyerror lc rgb '#009E73' title 'grpo', \
     '/work/main/docs/examples/bench-spmv-h100/plots/speedup_bars.dat' index 3 using 1:2:3:4:(1):2 with boxxyerror lc rgb '#CC79A7' title 'random', \
     1 with lines dt 2 lc rgb '#444444' title 'cuSPARSE'
