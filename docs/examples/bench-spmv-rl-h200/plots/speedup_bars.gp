# Speedup over cuSPARSE per matrix: written by sparserl; run `gnuplot speedup_bars.gp` to redraw.
set terminal pngcairo noenhanced size 1432,560 font 'sans,10'
set output '/work/main/docs/examples/bench-spmv-rl-h200/plots/speedup_bars.png'
set title 'Speedup over cuSPARSE per matrix (above 1: faster; no bar: no correct kernel)'
set ylabel 'speedup (cuSPARSE time / kernel time)'
set logscale y
set yrange [0.6666666666666666:4.8011113683723075]
set ytics ('0.7x' 0.7, '1x' 1.0, '1.5x' 1.5, '2x' 2.0, '3x' 3.0)
set xrange [-1:11]
set grid ytics
set key outside right top
set style fill solid 0.85 border -1
set bmargin 10
set xtics rotate by 60 right font ',8' ('bcspwr03' 0, 'bfwa62' 1, 'bcspwr01' 2, 'pts5ldd03' 3, 'test_FW_2003' 4, 'temp' 5, 'lp_e226' 6, 'bp_1200' 7, 'adder_dcop_05' 8, 'nnc1374' 9, 'bcspwr08' 10)
plot '/work/main/docs/examples/bench-spmv-rl-h200/plots/speedup_bars.dat' index 0 using 1:2:3:4:(1):2 with boxxyerror lc rgb '#0072B2' title 'template', \
     '/work/main/docs/examples/bench-spmv-rl-h200/plots/speedup_bars.dat' index 1 using 1:2:3:4:(1):2 with boxxyerror lc rgb '#D55E00' title 'sft', \
     '/work/main/docs/examples/bench-spmv-rl-h200/plots/speedup_bars.dat' index 2 using 1:2:3:4:(1):2 with boxxyerror lc rgb '#009E73' title 'grpo-s1', \
     '/work/main/docs/examples/bench-spmv-rl-h200/plots/speedup_bars.dat' index 3 using 1:2:3:4:(1):2 with boxxyerror lc rgb '#CC79A7' title 'grpo-s2', \
     '/work/main/docs/examples/bench-spmv-rl-h200/plots/speedup_bars.dat' index 4 using 1:2:3:4:(1):2 with boxxyerror lc rgb '#E69F00' title 'ppo-s1', \
     '/work/main/docs/examples/bench-spmv-rl-h200/plots/speedup_bars.dat' index 5 using 1:2:3:4:(1):2 with boxxyerror lc rgb '#56B4E9' title 'ppo-s2', \
     '/work/main/docs/examples/bench-spmv-rl-h200/plots/speedup_bars.dat' index 6 using 1:2:3:4:(1):2 with boxxyerror lc rgb '#000000' title 'reinforce-s1', \
     '/work/main/docs/examples/bench-spmv-rl-h200/plots/speedup_bars.dat' index 7 using 1:2:3:4:(1):2 with boxxyerror lc rgb '#F0E442' title 'reinforce-s2', \
     1 with lines dt 2 lc rgb '#444444' title 'cuSPARSE'
